package main

// Fortran wrappers. Open MPI's Fortran bindings (mpif.h, use mpi, use
// mpi_f08) call PMPI_* directly, so the C wrappers never see a Fortran
// program's calls; MPICH's mpif.h bindings call the C MPI_* (the call site is
// then inside libmpichfort), its mpi_f08 ones PMPI_*. So the tracer wraps
// every Fortran spelling the installed Fortran libraries export, from the
// same prototypes and table as the C wrappers:
//
//   - every Fortran argument is a pointer (handles are MPI_Fint, or an f08
//     struct holding one, passed by reference: the same shape), followed by
//     ierror (which mpi_f08 may omit: NULL), then the hidden lengths of
//     character arguments;
//   - the wrapper converts the arguments its record needs to their C form
//     (PMPI_*_f2c), substitutes its own status for MPI_STATUS(ES)_IGNORE,
//     calls the real Fortran function (the "next" definition, handed over by
//     the preload stub), and records with the C wrapper's code (table.go),
//     under the C function's id;
//   - the thread's busy flag (dt_enter) makes a C MPI_* call nested in the
//     Fortran binding (MPICH's mpif.h) pass straight through, so each call
//     is recorded once, with the wrapper's return address (the program's
//     Fortran code) as call site.
//
// Arguments are forwarded by position, each pointer-sized, and the wrapper
// declares two more than it knows of: a binding with an extra hidden
// argument still gets every one of its arguments.

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// fortKind tells how a Fortran spelling passes its choice buffers.
type fortKind int

const (
	fortF77   fortKind = iota // mpif.h and use mpi: addresses
	fortF08                   // mpi_f08 (Open MPI: addresses)
	fortF08TS                 // mpi_f08 of MPICH (TS 29113): a C descriptor, address first
)

// fortSym is one exported Fortran symbol wrapping C function CName.
type fortSym struct {
	Sym, CName string
	Kind       fortKind
}

// fortranLibSymbols lists what the Fortran MPI libraries of compiler
// wrapper fc export (nil when fc is not installed).
func fortranLibSymbols(fc string) (map[string]bool, error) {
	if fc == "" {
		return nil, nil
	}
	if _, err := exec.LookPath(fc); err != nil {
		return nil, nil
	}
	out, err := exec.Command(fc, "-showme:link").Output() // Open MPI
	if err != nil {
		out, err = exec.Command(fc, "-show").Output() // MPICH
	}
	if err != nil {
		return nil, fmt.Errorf("%s: cannot get its flags: %w", fc, err)
	}
	var ldirs, libs []string
	for _, f := range strings.Fields(string(out)) {
		switch {
		case strings.HasPrefix(f, "-L"):
			ldirs = append(ldirs, f[2:])
		case strings.HasPrefix(f, "-lmpi"):
			libs = append(libs, f[2:])
		}
	}
	ldirs = append(ldirs, "/usr/lib/x86_64-linux-gnu", "/usr/lib")
	syms := map[string]bool{}
	for _, l := range libs {
		for _, d := range ldirs {
			p := filepath.Join(d, "lib"+l+".so")
			s, err := librarySymbols(p)
			if err != nil {
				continue
			}
			for k := range s {
				syms[k] = true
			}
			break
		}
	}
	return syms, nil
}

// fortHand are written by hand (rt/dt_fortran.c, through macros): they
// start and stop tracing, or their Fortran binding differs from C's
// (MPI_PCONTROL has no ierror and no variadic part).
var fortHand = map[string]string{
	"MPI_Init": "DT_FW_INIT", "MPI_Init_thread": "DT_FW_INIT_THREAD", "MPI_Finalize": "DT_FW_FINALIZE",
	"MPI_Abort": "DT_FW_ABORT", "MPI_Pcontrol": "DT_FW_PCONTROL",
}

// fortSkip have Fortran bindings that are functions of address-sized
// integers (no ierror); they are cheap arithmetic, left untraced.
var fortSkip = map[string]bool{"MPI_Aint_add": true, "MPI_Aint_diff": true}

// fortranSyms maps the C prototypes to the Fortran symbols exported in fsyms.
func fortranSyms(protos []Proto, fsyms map[string]bool) []fortSym {
	var out []fortSym
	for _, p := range protos {
		if !fortEligible(p) {
			continue
		}
		lo, up := strings.ToLower(p.Name), strings.ToUpper(p.Name)
		for _, c := range []fortSym{
			{lo + "_", p.Name, fortF77}, {lo + "__", p.Name, fortF77}, {lo, p.Name, fortF77}, {up, p.Name, fortF77},
			{lo + "_f08_", p.Name, fortF08}, {lo + "_f08ts_", p.Name, fortF08TS},
		} {
			if fsyms[c.Sym] {
				out = append(out, c)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Sym < out[j].Sym })
	return out
}

func fortEligible(p Proto) bool {
	if fortHand[p.Name] != "" {
		return true
	}
	if fortSkip[p.Name] || p.Variadic {
		return false
	}
	for _, a := range p.Params {
		if strings.Contains(a.Type, "MPI_Fint") || strings.Contains(a.Type, "F08_status") {
			return false // conversion functions: C only
		}
	}
	return p.Ret == "int" || (p.Ret == "double" && len(p.Params) == 0)
}

var f2c = map[string]string{
	"MPI_Comm": "Comm", "MPI_Datatype": "Type", "MPI_Op": "Op", "MPI_Group": "Group", "MPI_Info": "Info",
	"MPI_Request": "Request", "MPI_Message": "Message", "MPI_Win": "Win", "MPI_Errhandler": "Errhandler",
}

var argRef = regexp.MustCompile(`\ba(\d+)\b`)

// fortLocals declares the C view a<i> of each Fortran argument the record
// code uses: before the call for values and in/out handles read by pre,
// after it for handles the call creates.
func fortLocals(p Proto, used, usedPre map[int]bool, kind fortKind) (before, after string, err error) {
	var b, a strings.Builder
	for i, prm := range p.Params {
		if !used[i] {
			continue
		}
		ty := strings.ReplaceAll(strings.ReplaceAll(prm.Type, "const", ""), " ", "") // "int*", "MPI_Comm"
		switch {
		case ty == "int":
			fmt.Fprintf(&b, "int a%d = *(MPI_Fint *)f%d; ", i, i)
		case ty == "MPI_Aint" || ty == "MPI_Offset" || ty == "MPI_Count":
			fmt.Fprintf(&b, "%s a%d = *(%s *)f%d; ", ty, i, ty, i)
		case f2c[ty] != "":
			fmt.Fprintf(&b, "%s a%d = PMPI_%s_f2c(*(MPI_Fint *)f%d); ", ty, i, f2c[ty], i)
		case strings.HasSuffix(ty, "*") && f2c[strings.TrimSuffix(ty, "*")] != "":
			h := strings.TrimSuffix(ty, "*")
			fmt.Fprintf(&b, "%s c%d; %s *a%d = &c%d; ", h, i, h, i, i)
			if usedPre[i] {
				fmt.Fprintf(&b, "c%d = PMPI_%s_f2c(*(MPI_Fint *)f%d); ", i, f2c[h], i)
			}
			fmt.Fprintf(&a, "c%d = PMPI_%s_f2c(*(MPI_Fint *)f%d); ", i, f2c[h], i)
		case ty == "int*" || ty == "int[]":
			fmt.Fprintf(&b, "int *a%d = (int *)f%d; ", i, i)
		case ty == "void*":
			fmt.Fprintf(&b, "void *a%d = dt_fbuf(f%d, %d); ", i, i, kind)
		default:
			return "", "", fmt.Errorf("%s: no Fortran conversion for argument %d (%s)", p.Name, i, prm.Type)
		}
	}
	return b.String(), a.String(), nil
}

// genFortran writes the Fortran wrappers of one implementation. fid maps C
// function names to their ids (genWrappers).
func genFortran(protos []Proto, fsyms map[string]bool, fid map[string]int, fc string) ([]byte, error) {
	sp := special()
	byName := map[string]Proto{}
	for _, p := range protos {
		byName[p.Name] = p
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by tracer/gen from the installed mpi.h and the Fortran libraries of %s; DO NOT EDIT.\n\n", fc)
	b.WriteString("#include \"dt_fortran.h\"\n\n")
	var syms []fortSym
	for _, s := range fortranSyms(protos, fsyms) {
		if _, ok := fid[s.CName]; ok {
			syms = append(syms, s)
		}
	}
	for j, s := range syms {
		p := byName[s.CName]
		if m := fortHand[s.CName]; m != "" {
			fmt.Fprintf(&b, "%s(%s, %d, %d)\n\n", m, s.Sym, j, fid[s.CName])
			continue
		}
		t, ok := sp[p.Name]
		if !ok && strings.HasSuffix(p.Name, "_c") {
			t, ok = sp[strings.TrimSuffix(p.Name, "_c")]
		}
		if !ok {
			t = tmpl{post: genericPost(p)}
		}
		t = withFold(p.Name, t)
		if err := emitFortran(&b, p, s, j, fid[p.Name], t); err != nil {
			return nil, err
		}
	}
	b.WriteString("const char *const dt_ffnames[] = {\n")
	for _, s := range syms {
		fmt.Fprintf(&b, "\t%q,\n", s.Sym)
	}
	b.WriteString("\tNULL,\n};\nconst int dt_nffuncs = sizeof(dt_ffnames) / sizeof(dt_ffnames[0]) - 1;\n")
	b.WriteString("void *const dt_ffwraps[] = {\n")
	for _, s := range syms {
		fmt.Fprintf(&b, "\t(void *)%s,\n", s.Sym)
	}
	fmt.Fprintf(&b, "\tNULL,\n};\nvoid *dt_fnext[%d];\n", len(syms)+1)
	return b.Bytes(), nil
}

func emitFortran(b *bytes.Buffer, p Proto, s fortSym, j, fid int, t tmpl) error {
	post := t.post
	if t.fpost != "" {
		post = t.fpost
	}
	need := t.need
	if need == "" {
		need = "160"
	}
	rc := t.rc
	if t.frc[1] > 0 {
		rc = t.frc
	}
	// Which arguments the record code reads, and which of them before the
	// call (counts of converted arrays too).
	used, usedPre := map[int]bool{}, map[int]bool{}
	for _, m := range argRef.FindAllStringSubmatch(t.pre, -1) {
		var i int
		fmt.Sscan(m[1], &i)
		used[i], usedPre[i] = true, true
	}
	for _, m := range argRef.FindAllStringSubmatch(post+" "+need, -1) {
		var i int
		fmt.Sscan(m[1], &i)
		used[i] = true
	}
	if rc[1] > 0 {
		used[rc[0]], usedPre[rc[0]] = true, true
	}
	if t.sts[1] > 0 {
		used[t.sts[0]], usedPre[t.sts[0]] = true, true
	}
	before, after, err := fortLocals(p, used, usedPre, s.Kind)
	if err != nil {
		return err
	}
	nchar := 0
	var decls, fargs []string
	for i, prm := range p.Params {
		decls = append(decls, fmt.Sprintf("void *f%d", i))
		fargs = append(fargs, fmt.Sprintf("f%d", i))
		if strings.Contains(prm.Type, "char") {
			nchar++
		}
	}
	ret := "void"
	if p.Ret == "int" {
		decls = append(decls, "MPI_Fint *ierr")
		fargs = append(fargs, "ierr")
		for k := 0; k < nchar+2; k++ {
			decls = append(decls, fmt.Sprintf("uintptr_t x%d", k))
			fargs = append(fargs, fmt.Sprintf("x%d", k))
		}
	} else {
		ret = p.Ret
	}
	if len(decls) == 0 {
		decls = []string{"void"}
	}
	ftype := fmt.Sprintf("%s (*)(%s)", ret, strings.Join(decls, ", "))
	call := func(args []string) string {
		return fmt.Sprintf("((%s)dt_fnext[%d])(%s)", ftype, j, strings.Join(args, ", "))
	}
	callArgs := append([]string(nil), fargs...)
	var pre strings.Builder
	pre.WriteString(t.pre)
	if k := rc[1] - 1; k >= 0 {
		fmt.Fprintf(&pre, "MPI_Request *dt_rs = dt_freqs(T, a%d, (MPI_Fint *)f%d); ", rc[0], k)
	}
	if k := t.sts[1] - 1; k >= 0 {
		fmt.Fprintf(&pre, "MPI_Fint *dt_fsts = dt_fstatuses(T, a%d, f%d); ", t.sts[0], k)
		callArgs[k] = "dt_fsts"
	}
	if k := t.st - 1; k >= 0 {
		fmt.Fprintf(&pre, "MPI_Status dt_st; MPI_Fint *dt_fsp = dt_fstatus(f%d, &dt_st); ", k)
		callArgs[k] = "dt_fsp"
	}
	if t.sts[1] > 0 {
		after += "MPI_Status *dt_sts = dt_fstatuses_c(dt_fsts); "
	}
	if t.st > 0 {
		after += "MPI_Status *dt_sp = (MPI_Status *)dt_fsp; "
	}
	fmt.Fprintf(b, "%s %s(%s) {\n", ret, s.Sym, strings.Join(decls, ", "))
	fmt.Fprintf(b, "\tdt_thr *T = dt_enter();\n")
	if p.Ret == "int" {
		fmt.Fprintf(b, "\tif (__builtin_expect(T == NULL, 0)) { %s; return; }\n", call(fargs))
	} else {
		fmt.Fprintf(b, "\tif (__builtin_expect(T == NULL, 0)) return %s;\n", call(fargs))
	}
	if before != "" || pre.Len() > 0 {
		fmt.Fprintf(b, "\t%s%s\n", before, pre.String())
	}
	if p.Ret == "int" {
		fmt.Fprintf(b, "\tuint64_t t0 = dt_entry(T, %d, __builtin_return_address(0));\n\t%s;\n\tuint64_t t1 = dt_now();\n", fid, call(callArgs))
		b.WriteString("\tint dt_ok = ierr == NULL || *ierr == MPI_SUCCESS; (void)dt_ok;\n")
	} else {
		fmt.Fprintf(b, "\tuint64_t t0 = dt_entry(T, %d, __builtin_return_address(0));\n\t%s r = %s;\n\tuint64_t t1 = dt_now();\n\tint dt_ok = 1; (void)dt_ok;\n", fid, ret, call(callArgs))
	}
	if after != "" {
		fmt.Fprintf(b, "\t%s\n", after)
	}
	fmt.Fprintf(b, "\tdt_hdr *H = dt_rec_begin(T, %d, t0, t1, __builtin_frame_address(0), %s);\n", fid, need)
	if post != "" {
		fmt.Fprintf(b, "\tif (H) { %s%s }\n", wideDecl(post), post)
	}
	b.WriteString("\t" + t.recEnd() + "\n")
	if p.Ret != "int" {
		b.WriteString("\treturn r;\n")
	}
	b.WriteString("}\n\n")
	return nil
}
