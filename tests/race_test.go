//go:build race

package tests

// raceEnabled: this binary was built with -race.
const raceEnabled = true
