// Command dump prints a trace file event by event, for debugging the tracer:
//
//	go run ./tracer/dump app.0.trc
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/dtpa/dtpa/traceformat"
)

func main() {
	for _, name := range os.Args[1:] {
		if err := dump(name); err != nil {
			fmt.Fprintln(os.Stderr, "dump:", err)
			os.Exit(1)
		}
	}
}

func dump(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := traceformat.NewReader(f, traceformat.ReaderOptions{Name: name})
	if err != nil {
		return err
	}
	h := r.Header()
	fmt.Printf("%s: rank %d/%d host %s clock %v %.0f Hz params %v mpi %q level %d\n", name, h.Rank, h.WorldSize,
		h.Hostname, h.Clock.Source, h.Clock.TscHz, h.Params, h.MpiImplementation, h.ThreadLevel)
	var prev int64
	for {
		e, err := r.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fmt.Println("error:", err)
			break
		}
		d := r.Definitions()
		fmt.Printf("t%d %-22s +%8dns dur %7dns site %d %v", e.Thread, d.Function(e.Func).Name, e.Entry-prev, e.Exit-e.Entry, e.Site, d.CallSites[e.Site])
		prev = e.Entry
		a := e.Attr
		if a&traceformat.AttrComm != 0 {
			c := d.Comm(e.Comm)
			fmt.Printf(" comm %d(id %x n%d)", e.Comm, c.Id, len(c.Members))
		}
		if a&traceformat.AttrSend != 0 {
			fmt.Printf(" send %d/%d", e.SendPeer, e.SendTag)
		}
		if a&traceformat.AttrRecv != 0 {
			fmt.Printf(" recv %d/%d", e.RecvPeer, e.RecvTag)
		}
		if a&traceformat.AttrSendBytes != 0 {
			fmt.Printf(" sb %d", e.SendBytes)
		}
		if a&traceformat.AttrRecvBytes != 0 {
			fmt.Printf(" rb %d", e.RecvBytes)
		}
		if a&traceformat.AttrRoot != 0 {
			fmt.Printf(" root %d", e.Root)
		}
		if a&traceformat.AttrReqs != 0 {
			fmt.Printf(" reqs %x", e.Reqs)
		}
		if a&traceformat.AttrStatus != 0 {
			fmt.Printf(" status %v", e.Status)
		}
		if a&traceformat.AttrNewComm != 0 {
			fmt.Printf(" newcomm %d", e.NewComm)
		}
		if a&traceformat.AttrPcontrol != 0 {
			fmt.Printf(" pc %d,%d", e.PcLevel, e.PcArg)
		}
		if a&traceformat.AttrFlag != 0 {
			fmt.Printf(" flag %v", e.Flag)
		}
		if a&traceformat.AttrCalls != 0 {
			// A folded run (unsuccessful polls, queries): dur is their
			// summed time inside MPI, inner the time between them.
			fmt.Printf(" calls %d", e.Calls)
		}
		if e.Attr&traceformat.AttrInnerGaps != 0 {
			fmt.Printf(" inner %dns", e.InnerGaps)
		}
		fmt.Println()
	}
	for _, c := range r.ClockSyncs() {
		fmt.Printf("clocksync phase %v ref %d same %v samples %d", c.Phase, c.Reference, c.SameClock, len(c.LocalSendNs))
		if len(c.LocalSendNs) > 0 {
			best := 0
			for i := range c.LocalSendNs {
				if c.LocalRecvNs[i]-c.LocalSendNs[i] < c.LocalRecvNs[best]-c.LocalSendNs[best] {
					best = i
				}
			}
			fmt.Printf(" min rtt %d ns offset %d ns", c.LocalRecvNs[best]-c.LocalSendNs[best],
				c.RemoteNs[best]-(c.LocalSendNs[best]+c.LocalRecvNs[best])/2)
		}
		fmt.Println()
	}
	fmt.Printf("modules %d, footer %v\n", len(r.Definitions().Modules), r.Footer())
	return nil
}
