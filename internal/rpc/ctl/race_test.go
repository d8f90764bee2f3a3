//go:build race

package ctl

const raceEnabled = true
