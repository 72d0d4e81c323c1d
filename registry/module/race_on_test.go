//go:build race

package module

const raceEnabled = true
