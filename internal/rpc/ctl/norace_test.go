//go:build !race

package ctl

const raceEnabled = false
