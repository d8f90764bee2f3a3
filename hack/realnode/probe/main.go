// Command probe is the one program of the real-node tests' tiny image
// (internal/testenv/realnode_image.go): a static binary that serves as the
// sandbox ("pause") image and as a workload.
//
//	probe                 waits for SIGTERM or SIGINT, then exits 0 (pause)
//	probe echo WORDS...   prints WORDS and exits 0
//	probe exit N          exits with status N
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

func main() {
	args := os.Args[1:]
	if len(args) == 0 || args[0] == "pause" {
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
		<-c
		return
	}
	switch args[0] {
	case "echo":
		fmt.Println(strings.Join(args[1:], " "))
	case "exit":
		n := 1
		if len(args) > 1 {
			n, _ = strconv.Atoi(args[1])
		}
		os.Exit(n)
	default:
		fmt.Fprintf(os.Stderr, "probe: unknown command %q (want pause, echo or exit)\n", args[0])
		os.Exit(2)
	}
}
