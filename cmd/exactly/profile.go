package main

import (
	"fmt"

	"github.com/pkg/profile"
)

// startProfileIn starts pkg/profile writing into dir (named after the run
// id, so the dashboard's FindProfiles links its files), or nothing when
// kind is empty.
func startProfileIn(kind, dir string) (stop func(), err error) {
	var mode func(*profile.Profile)
	switch kind {
	case "":
		return func() {}, nil
	case "cpu":
		mode = profile.CPUProfile
	case "mem":
		mode = profile.MemProfile
	case "block":
		mode = profile.BlockProfile
	case "mutex":
		mode = profile.MutexProfile
	case "trace":
		mode = profile.TraceProfile
	default:
		return nil, fmt.Errorf("--profile %q: want cpu, mem, block, mutex or trace", kind)
	}
	p := profile.Start(mode, profile.ProfilePath(dir), profile.NoShutdownHook)
	return p.Stop, nil
}
