package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

// Profile is where a process spent its CPU while profiled: the functions
// with most samples in themselves (Flat), and Herald's own functions by the
// samples whose innermost Herald function they are (Herald): the time in
// them and in the libraries and runtime they call, so that a statement's
// round trip counts for the Herald function that sent it.
type Profile struct {
	Flat, Herald []ProfileLine
}

// ProfileLine is one function's share of a profile's samples.
type ProfileLine struct {
	Func  string
	Share float64
}

// heraldModule prefixes the names of Herald's own functions.
const heraldModule = "github.com/heraldhq/herald/"

// profileTop is how many functions each list keeps.
const profileTop = 8

// readProfile reads a CPU profile Go's profiler wrote and ranks its
// functions by their share of the CPU time.
func readProfile(path string) (Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return Profile{}, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return Profile{}, fmt.Errorf("parse %s: %w", path, err)
	}
	return rankProfile(p), nil
}

// rankProfile ranks a profile's functions. A sample's first line is the
// function that was running (its flat time); its innermost Herald function
// is the first line from there up the stack in Herald's module (inlined
// calls are lines of one location, innermost first).
func rankProfile(p *profile.Profile) Profile {
	if len(p.SampleType) == 0 {
		return Profile{}
	}
	value := len(p.SampleType) - 1 // CPU nanoseconds, after the sample count
	flat, own := map[string]int64{}, map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		v := s.Value[value]
		total += v
		first, herald := true, false
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function == nil || herald {
					continue
				}
				name := line.Function.Name
				if first {
					flat[name] += v
					first = false
				}
				if strings.HasPrefix(name, heraldModule) {
					own[shortName(name)] += v
					herald = true
				}
			}
		}
	}
	if total == 0 {
		return Profile{}
	}
	return Profile{Flat: ranked(flat, total), Herald: ranked(own, total)}
}

// shortName drops Herald's module path and generic type arguments from a
// function's name: db.scoped[...].InTenant.func1 reads db.scoped.InTenant.func1.
func shortName(name string) string {
	name = strings.TrimPrefix(name, heraldModule)
	var b strings.Builder
	depth := 0
	for _, r := range name {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// ranked returns the functions with the largest values, as shares of total.
func ranked(values map[string]int64, total int64) []ProfileLine {
	lines := make([]ProfileLine, 0, len(values))
	for name, v := range values {
		lines = append(lines, ProfileLine{Func: name, Share: float64(v) / float64(total)})
	}
	sort.Slice(lines, func(i, j int) bool {
		if lines[i].Share != lines[j].Share {
			return lines[i].Share > lines[j].Share
		}
		return lines[i].Func < lines[j].Func
	})
	return lines[:min(len(lines), profileTop)]
}
