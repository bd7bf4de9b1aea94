package main

import (
	"flag"
	"os"
	"testing"
)

// TestMain lets four of the kit's seven runs go at once unless -parallel says otherwise: each run
// spends its time waiting on its consumer (leases to lapse, a worker's interval, a rule's
// timeout), not on the cores, and go test's default of one parallel test per core ran them two
// at a time. Not all seven: each run holds about 17 PostgreSQL connections, and seven would pass
// the 100 a default server allows.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", "4"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
