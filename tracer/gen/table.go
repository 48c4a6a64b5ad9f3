package main

import (
	"fmt"
	"strings"
)

// tmpl says what a wrapper records beyond function, times and call site. Code
// refers to arguments by position (a0, a1 …) and uses the record macros of
// rt/dt_wrap.h, which must be emitted in attribute-bit order: CM, SEND,
// RECV, SB/SBN, RB/RBN, ROOT, REQ*, STAT*, NEWC, PC, FLAG.
type tmpl struct {
	pre  string         // before the call (copies of requests)
	args map[int]string // replacement expressions for arguments of the PMPI call
	post string         // after the call: record attributes
	need string         // bytes the record may take (default 160)
	// poll: a test or probe; the C condition under which the call completed
	// nothing (found no message), so that a run of such calls is folded into
	// one record (dt_rec_end_poll). Fortran's flags and counts are at the
	// same positions and its request copies are C handles, so both wrappers
	// use it.
	poll string
	// query: a run of the call is folded like polls while the calls follow
	// each other closely (foldable, dt_rec_end_query).
	query bool
	// Arguments that the wrapper replaces or copies, by position + 1 (0:
	// none): the C and the Fortran wrappers do this differently (Fortran
	// handles and status sentinels need converting).
	st  int    // a status that may be MPI_STATUS_IGNORE (dt_sp)
	sts [2]int // count position, statuses that may be MPI_STATUSES_IGNORE (dt_sts)
	rc  [2]int // count position, requests copied before the call (dt_rs)
	// Fortran only: post when it differs from post (1-based indices, arrays
	// of handles), and a request array to convert (dt_rs) that C reads as is.
	fpost string
	frc   [2]int
}

// handWritten functions are written by hand in rt/dt_init.c (their
// Fortran bindings in rt/dt_fortran.c: fortHand): they start and stop
// tracing.
var handWritten = map[string]bool{
	"MPI_Init": true, "MPI_Init_thread": true, "MPI_Finalize": true, "MPI_Abort": true,
}

// statusArg substitutes a private status when the program passed
// MPI_STATUS_IGNORE, so that the actual source and tag can be recorded while
// the program still sees exactly what it asked for.
func statusArg(t tmpl, k int) tmpl {
	t.st = k + 1
	return t
}

func statusesArg(t tmpl, n, k int) tmpl {
	t.sts = [2]int{n, k + 1}
	return t
}

func reqsCopy(t tmpl, n, k int) tmpl {
	t.rc = [2]int{n, k + 1}
	t.need = fmt.Sprintf("dt_need_reqs(a%d)", n)
	return t
}

// cPre is the C wrapper's code before the call, and the arguments it
// replaces: copies of requests, substitutes for ignored statuses.
func (t tmpl) cPre() (string, map[int]string) {
	pre := t.pre
	args := map[int]string{}
	for i, a := range t.args {
		args[i] = a
	}
	if t.rc[1] > 0 {
		pre += fmt.Sprintf("MPI_Request *dt_rs = dt_req_scratch(T, a%d, a%d); ", t.rc[0], t.rc[1]-1)
	}
	if k := t.sts[1] - 1; k >= 0 {
		pre += fmt.Sprintf("MPI_Status *dt_sts = (a%d == MPI_STATUSES_IGNORE) ? dt_status_scratch(T, a%d) : a%d; ", k, t.sts[0], k)
		args[k] = "dt_sts"
	}
	if k := t.st - 1; k >= 0 {
		pre += fmt.Sprintf("MPI_Status dt_st; MPI_Status *dt_sp = (a%d == MPI_STATUS_IGNORE) ? &dt_st : a%d; ", k, k)
		args[k] = "dt_sp"
	}
	return pre, args
}

// special holds the functions whose arguments matter for matching. Every
// other function gets the generic treatment of genericPost.
func special() map[string]tmpl {
	m := map[string]tmpl{}
	sendLike := "CM(a5) SEND(a3, a4) SB(a1, a2)"
	for _, n := range []string{"Send", "Bsend", "Ssend", "Rsend"} {
		m["MPI_"+n] = tmpl{post: sendLike}
		m["MPI_I"+strings.ToLower(n[:1])+n[1:]] = tmpl{post: sendLike + " REQC(*a6, 0)"}
		m["MPI_"+n+"_init"] = tmpl{post: sendLike + " REQC(*a6, 0)"}
	}
	m["MPI_Recv"] = statusArg(tmpl{post: "CM(a5) RECV(a3, a4) RB(a1, a2) STAT(dt_sp)"}, 6)
	m["MPI_Irecv"] = tmpl{post: "CM(a5) RECV(a3, a4) RB(a1, a2) REQC(*a6, DT_RK_RECV)"}
	m["MPI_Recv_init"] = tmpl{post: "CM(a5) RECV(a3, a4) RB(a1, a2) REQC(*a6, DT_RK_PRECV)"}
	m["MPI_Sendrecv"] = statusArg(tmpl{post: "CM(a10) SEND(a3, a4) RECV(a8, a9) SB(a1, a2) RB(a6, a7) STAT(dt_sp)"}, 11)
	m["MPI_Sendrecv_replace"] = statusArg(tmpl{post: "CM(a7) SEND(a3, a4) RECV(a5, a6) SB(a1, a2) RB(a1, a2) STAT(dt_sp)"}, 8)
	m["MPI_Isendrecv"] = tmpl{post: "CM(a10) SEND(a3, a4) RECV(a8, a9) SB(a1, a2) RB(a6, a7) REQC(*a11, DT_RK_RECV)"}
	m["MPI_Isendrecv_replace"] = tmpl{post: "CM(a7) SEND(a3, a4) RECV(a5, a6) SB(a1, a2) RB(a1, a2) REQC(*a8, DT_RK_RECV)"}
	m["MPI_Probe"] = statusArg(tmpl{post: "CM(a2) RECV(a0, a1) STAT(dt_sp)"}, 3)
	m["MPI_Iprobe"] = statusArg(tmpl{post: "CM(a2) RECV(a0, a1) if (*a3) STAT(dt_sp) FLAG(*a3)", poll: "!*a3"}, 4)
	m["MPI_Mprobe"] = statusArg(tmpl{post: "CM(a2) RECV(a0, a1) STAT(dt_sp)"}, 4)
	m["MPI_Improbe"] = statusArg(tmpl{post: "CM(a2) RECV(a0, a1) if (*a3) STAT(dt_sp) FLAG(*a3)", poll: "!*a3"}, 5)
	m["MPI_Mrecv"] = statusArg(tmpl{post: "RB(a1, a2) STAT(dt_sp)"}, 4)
	m["MPI_Imrecv"] = tmpl{post: "RB(a1, a2) REQC(*a4, DT_RK_RECV)"}

	// Completion: requests are copied first because MPI sets completed ones to
	// MPI_REQUEST_NULL.
	m["MPI_Wait"] = statusArg(tmpl{pre: "MPI_Request dt_r = *a0; ", post: "DONE1(dt_r, dt_sp)"}, 1)
	m["MPI_Test"] = statusArg(tmpl{pre: "MPI_Request dt_r = *a0; ", post: "if (*a1) DONE1(dt_r, dt_sp) FLAG(*a1)", poll: "!*a1 || dt_r == MPI_REQUEST_NULL"}, 2)
	m["MPI_Waitany"] = statusArg(reqsCopy(tmpl{post: "if (*a2 >= 0) DONE1(dt_rs[*a2], dt_sp)"}, 0, 1), 3)
	m["MPI_Testany"] = statusArg(reqsCopy(tmpl{post: "if (*a3 && *a2 >= 0) DONE1(dt_rs[*a2], dt_sp) FLAG(*a3)", poll: "!*a3 || *a2 < 0"}, 0, 1), 4)
	m["MPI_Waitall"] = statusesArg(reqsCopy(tmpl{post: "DONEALL(a0, dt_rs, dt_sts)"}, 0, 1), 0, 2)
	m["MPI_Testall"] = statusesArg(reqsCopy(tmpl{post: "if (*a2) DONEALL(a0, dt_rs, dt_sts) FLAG(*a2)", poll: "!*a2 || dt_allnull(a0, dt_rs)"}, 0, 1), 0, 3)
	m["MPI_Waitsome"] = statusesArg(reqsCopy(tmpl{post: "DONESOME(*a2, a3, dt_rs, dt_sts)"}, 0, 1), 0, 4)
	m["MPI_Testsome"] = statusesArg(reqsCopy(tmpl{post: "DONESOME(*a2, a3, dt_rs, dt_sts)", poll: "*a2 == 0 || *a2 == MPI_UNDEFINED"}, 0, 1), 0, 4)
	// Fortran indices are 1-based.
	for _, n := range []string{"MPI_Waitany", "MPI_Testany", "MPI_Waitsome", "MPI_Testsome"} {
		t := m[n]
		t.fpost = map[string]string{
			"MPI_Waitany":  "if (*a2 > 0) DONE1(dt_rs[*a2 - 1], dt_sp)",
			"MPI_Testany":  "if (*a3 && *a2 > 0) DONE1(dt_rs[*a2 - 1], dt_sp) FLAG(*a3)",
			"MPI_Waitsome": "DONESOME(*a2, dt_fidx(T, *a2, a3), dt_rs, dt_sts)",
			"MPI_Testsome": "DONESOME(*a2, dt_fidx(T, *a2, a3), dt_rs, dt_sts)",
		}[n]
		m[n] = t
	}
	m["MPI_Request_get_status"] = tmpl{post: "FLAG(*a1)", poll: "!*a1"}
	// MPI 4 partitioned receive: whether partition a1 has arrived (MPICH 4;
	// Open MPI 4.1 has it only as MPIX_Parrived, which is not wrapped).
	m["MPI_Parrived"] = tmpl{post: "FLAG(*a2)", poll: "!*a2"}
	m["MPI_Start"] = tmpl{post: "REQLIST(1, a0)"}
	m["MPI_Startall"] = tmpl{post: "REQLIST(a0, a1)", need: "dt_need_reqs(a0)", fpost: "REQLIST(a0, dt_rs)", frc: [2]int{0, 2}}
	m["MPI_Request_free"] = tmpl{pre: "MPI_Request dt_r = *a0; ", post: "REQFREE(dt_r)"}
	m["MPI_Cancel"] = tmpl{post: "REQLIST(1, a0)"}
	// Levels 100…103 take the interval number as the second argument; a
	// caller that cannot pass one (mpi4py's MPI.Pcontrol(level), like
	// Fortran's MPI_PCONTROL, dt_fortran.c) puts it in the level:
	// 100000 + n is (100, n), 101000 + n is (101, n), … (n ≤ 999).
	m["MPI_Pcontrol"] = tmpl{
		pre: "int64_t dt_pa = 0; int dt_pl = a0; if (a0 >= 100 && a0 <= 103) { va_list ap; va_start(ap, a0); dt_pa = va_arg(ap, int); va_end(ap); } " +
			"else if (a0 >= 100000 && a0 < 104000) { dt_pl = a0 / 1000; dt_pa = a0 % 1000; } ",
		post: "if (dt_pl >= 100 && dt_pl <= 103) PC(dt_pl, dt_pa)",
	}

	// Collectives: bytes this rank contributes (SB) and receives (RB).
	coll := map[string]struct {
		post string
		nreq int // position of the request of the nonblocking variant
	}{
		"Barrier":              {"CM(a0)", 1},
		"Bcast":                {"CM(a4) if (ISROOT(a3)) SB(a1, a2) if (!ISROOT(a3)) RB(a1, a2) ROOT(a3)", 5},
		"Reduce":               {"CM(a6) if (a0 != MPI_IN_PLACE) SB(a2, a3) if (ISROOT(a5)) RB(a2, a3) ROOT(a5)", 7},
		"Allreduce":            {"CM(a5) SB(a2, a3) RB(a2, a3)", 6},
		"Gather":               {"CM(a7) if (a0 != MPI_IN_PLACE) SB(a1, a2) if (ISROOT(a6)) RBN((int64_t)a4 * CSIZE * SZ(a5)) ROOT(a6)", 8},
		"Gatherv":              {"CM(a8) if (a0 != MPI_IN_PLACE) SB(a1, a2) if (ISROOT(a7)) RBN(SUM(a4) * SZ(a6)) ROOT(a7)", 9},
		"Scatter":              {"CM(a7) if (ISROOT(a6)) SBN((int64_t)a1 * CSIZE * SZ(a2)) if (a3 != MPI_IN_PLACE) RB(a4, a5) ROOT(a6)", 8},
		"Scatterv":             {"CM(a8) if (ISROOT(a7)) SBN(SUM(a1) * SZ(a3)) if (a4 != MPI_IN_PLACE) RB(a5, a6) ROOT(a7)", 9},
		"Allgather":            {"CM(a6) if (a0 != MPI_IN_PLACE) SB(a1, a2) RBN((int64_t)a4 * CSIZE * SZ(a5))", 7},
		"Allgatherv":           {"CM(a7) if (a0 != MPI_IN_PLACE) SB(a1, a2) RBN(SUM(a4) * SZ(a6))", 8},
		"Alltoall":             {"CM(a6) if (a0 != MPI_IN_PLACE) SBN((int64_t)a1 * CSIZE * SZ(a2)) RBN((int64_t)a4 * CSIZE * SZ(a5))", 7},
		"Alltoallv":            {"CM(a8) if (a0 != MPI_IN_PLACE) SBN(SUM(a1) * SZ(a3)) RBN(SUM(a5) * SZ(a7))", 9},
		"Alltoallw":            {"CM(a8) if (a0 != MPI_IN_PLACE) SBN(SUMW(a1, a3)) RBN(SUMW(a5, a7))", 9},
		"Reduce_scatter":       {"CM(a5) SBN(SUM(a2) * SZ(a3)) if (C && C->rank >= 0) RBN((int64_t)a2[C->rank] * SZ(a3))", 6},
		"Reduce_scatter_block": {"CM(a5) SBN((int64_t)a2 * CSIZE * SZ(a3)) RB(a2, a3)", 6},
		"Scan":                 {"CM(a5) SB(a2, a3) RB(a2, a3)", 6},
		"Exscan":               {"CM(a5) SB(a2, a3) RB(a2, a3)", 6},
	}
	for name, c := range coll {
		m["MPI_"+name] = tmpl{post: c.post}
		in := "MPI_I" + strings.ToLower(name[:1]) + name[1:]
		m[in] = tmpl{post: c.post + fmt.Sprintf(" REQC(*a%d, 0)", c.nreq)}
		// Persistent (MPI 4): an MPI_Info, then the request.
		m["MPI_"+name+"_init"] = tmpl{post: c.post + fmt.Sprintf(" REQC(*a%d, 0)", c.nreq+1)}
	}
	// Fortran passes the datatypes of Alltoallw as an array of Fortran handles.
	fw := "CM(a8) if (a0 != MPI_IN_PLACE) SBN(dt_fsumw(T, C, a1, f3)) RBN(dt_fsumw(T, C, a5, f7))"
	m["MPI_Alltoallw"] = tmpl{post: m["MPI_Alltoallw"].post, fpost: fw}
	m["MPI_Ialltoallw"] = tmpl{post: m["MPI_Ialltoallw"].post, fpost: fw + " REQC(*a9, 0)"}
	m["MPI_Alltoallw_init"] = tmpl{post: m["MPI_Alltoallw_init"].post, fpost: fw + " REQC(*a10, 0)"}

	// Communicator creation: the new communicator gets an id that agrees
	// across ranks (see dt_comm_created in rt/dt_comm.c).
	newc := map[string][2]int{ // parent argument, newcomm argument
		"Comm_dup": {0, 1}, "Comm_dup_with_info": {0, 2}, "Comm_create": {0, 2}, "Comm_split": {0, 3},
		"Comm_split_type": {0, 4}, "Cart_create": {0, 5}, "Cart_sub": {0, 2}, "Graph_create": {0, 5},
		"Dist_graph_create": {0, 8}, "Dist_graph_create_adjacent": {0, 9}, "Intercomm_merge": {0, 2},
		"Intercomm_create": {0, 5},
	}
	for name, a := range newc {
		m["MPI_"+name] = tmpl{post: fmt.Sprintf("CM(a%d) NEWC(*a%d, a%d, DT_NC_COLL, 0)", a[0], a[1], a[0])}
	}
	m["MPI_Intercomm_create"] = tmpl{post: "CM(a0) NEWC(*a5, a0, DT_NC_INTER, a4)"}
	m["MPI_Comm_create_group"] = tmpl{post: "CM(a0) NEWC(*a3, a0, DT_NC_GROUP, a2)"}
	m["MPI_Comm_idup"] = tmpl{post: "CM(a0) REQC(*a2, 0) NEWC(*a1, a0, DT_NC_PENDING, 0)"}
	m["MPI_Comm_idup_with_info"] = tmpl{post: "CM(a0) REQC(*a3, 0) NEWC(*a2, a0, DT_NC_PENDING, 0)"}
	m["MPI_Comm_free"] = tmpl{pre: "MPI_Comm dt_c = *a0; ", post: "dt_comm_forget(dt_c);"}
	m["MPI_Comm_disconnect"] = m["MPI_Comm_free"]
	m["MPI_Type_free"] = tmpl{post: "dt_type_gen++;"}
	return m
}

// genericPost records the first communicator argument, the bytes an
// MPI-IO call reads or writes (fileBytes) and the request the call creates.
// Every MPI function whose last parameter is an MPI_Request * and that
// special() does not handle creates one: nonblocking and persistent
// operations of every kind (file I/O, MPI_Rget/Rput/…, MPI_Grequest_start,
// nonblocking neighbourhood collectives, partitioned communication), so
// that the wait completing it finds it created.
func genericPost(p Proto) string {
	var b strings.Builder
	for i, a := range p.Params {
		if a.Type == "MPI_Comm" {
			fmt.Fprintf(&b, "CM(a%d) ", i)
			break
		}
	}
	b.WriteString(fileBytes(p))
	if n := len(p.Params); n > 0 && p.Params[n-1].Type == "MPI_Request *" {
		fmt.Fprintf(&b, "REQC(*a%d, 0)", n-1)
	}
	return b.String()
}

// fileBytes records the size of the memory buffer an MPI-IO data access
// reads into (RB) or writes from (SB): count × the datatype's size, as
// requested (a read that meets the end of the file transfers less). Every
// MPI_File_ function with "read" or "write" in its name and a count
// followed by a datatype is one (blocking, nonblocking, split collective
// _begin, explicit offset, shared and ordered file pointers, large-count
// _c); the _end halves take no count and record nothing. The bytes are
// the profile's (report Function.bytes), not messages: no record of them
// names a peer.
func fileBytes(p Proto) string {
	if !strings.HasPrefix(p.Name, "MPI_File_") {
		return ""
	}
	mac := ""
	switch {
	case strings.Contains(p.Name, "write"):
		mac = "SB"
	case strings.Contains(p.Name, "read"):
		mac = "RB"
	default:
		return ""
	}
	for i := 0; i+1 < len(p.Params); i++ {
		if t := p.Params[i].Type; (t == "int" || t == "MPI_Count") && p.Params[i+1].Type == "MPI_Datatype" {
			return fmt.Sprintf("%s(a%d, a%d) ", mac, i, i+1)
		}
	}
	return ""
}

// foldable are the queries whose runs the tracer folds like unsuccessful
// polls while each call follows the previous one closely
// (dt_rec_end_query): calls that create, start, complete and free
// nothing, take no message and no collective part, so that the analyzer
// uses only their function, call site, attribute bytes (a communicator at
// most), count and time in MPI, which a folded record keeps exactly.
// Hot loops of them (a rank asked in every iteration, a timer read around
// each step) otherwise cost 28 bytes and an encoding per call. Their
// large-count variants (_c) fold too.
var foldable = map[string]bool{
	"MPI_Comm_rank": true, "MPI_Comm_size": true, "MPI_Comm_remote_size": true, "MPI_Comm_test_inter": true,
	"MPI_Comm_compare": true, "MPI_Comm_get_attr": true, "MPI_Attr_get": true, "MPI_Comm_get_name": true,
	"MPI_Group_size": true, "MPI_Group_rank": true,
	"MPI_Wtime": true, "MPI_Wtick": true,
	"MPI_Initialized": true, "MPI_Finalized": true, "MPI_Query_thread": true, "MPI_Is_thread_main": true,
	"MPI_Get_version": true, "MPI_Get_library_version": true, "MPI_Get_processor_name": true,
	"MPI_Get_count": true, "MPI_Get_elements": true, "MPI_Get_elements_x": true,
	"MPI_Type_size": true, "MPI_Type_size_x": true, "MPI_Type_get_extent": true, "MPI_Type_get_extent_x": true,
	"MPI_Type_get_true_extent": true, "MPI_Type_get_true_extent_x": true, "MPI_Type_get_name": true,
	"MPI_Get_address": true, "MPI_Address": true,
	"MPI_Topo_test": true, "MPI_Cartdim_get": true, "MPI_Cart_get": true, "MPI_Cart_rank": true,
	"MPI_Cart_coords": true, "MPI_Cart_shift": true, "MPI_Graphdims_get": true,
	"MPI_Dist_graph_neighbors_count": true,
}

// withFold makes the template of a foldable function fold its runs.
func withFold(name string, t tmpl) tmpl {
	if foldable[name] || foldable[strings.TrimSuffix(name, "_c")] {
		t.query = true
	}
	return t
}

// wideDecl is the declaration a record's code needs before post when post
// records a send byte count (SB, SBN): dt_wide, set when that count is
// written as a u64, so that a receive count after it is too (dt_wrap.h).
func wideDecl(post string) string {
	if strings.Contains(post, "SB(") || strings.Contains(post, "SBN(") {
		return "int dt_wide = 0; (void)dt_wide; "
	}
	return ""
}
