package main

import (
	"reflect"
	"testing"
)

func TestArgs(t *testing.T) {
	link := []string{"-L/x/lib", "-Wl,-rpath,/x/lib", "-Wl,--no-as-needed", "-ldtpa_preload"}
	for _, c := range []struct {
		in, want []string
	}{
		{[]string{"-O2", "-o", "app", "app.c"}, append(append([]string(nil), link...), "-O2", "-o", "app", "app.c")},
		{[]string{"-c", "app.c"}, []string{"-c", "app.c"}},
		{[]string{"-E", "app.c"}, []string{"-E", "app.c"}},
		{[]string{"--version"}, []string{"--version"}},
		{[]string{"a.o", "b.o", "-o", "app", "-lm"}, append(append([]string(nil), link...), "a.o", "b.o", "-o", "app", "-lm")},
	} {
		if got := Args(c.in, "/x/lib"); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Args(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestLookupEnv(t *testing.T) {
	env := []string{"DT_MPICC=a", "PATH=/bin", "DT_MPICC=b"}
	if got := lookupEnv(env, "DT_MPICC"); got != "b" {
		t.Errorf("last definition wins: got %q", got)
	}
	if got := lookupEnv(env, "DT_MPICXX"); got != "" {
		t.Errorf("missing: got %q", got)
	}
}
