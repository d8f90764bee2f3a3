// Command probe is the one program of the real-node tests' tiny image
// (internal/testenv/realnode_image.go): a static binary that serves as the
// sandbox ("pause") image and as a workload.
//
//	probe                 waits for SIGTERM or SIGINT, then exits 0 (pause)
//	probe echo WORDS...   prints WORDS and exits 0
//	probe exit N          exits with status N
//	probe alloc MIB       allocates and touches MIB MiB, then waits
//	probe noterm          ignores SIGTERM and waits (for SIGKILL)
//	probe term-after S    on SIGTERM, prints "SIGTERM", waits S seconds, exits 0
//	probe write PATH MIB  writes MIB MiB to PATH (fails when it can't), then
//	                      waits for SIGTERM and exits 143
//	probe cat PATH...     prints the files
//	probe id              prints uid and gid
//	probe dial ADDR       connects to ADDR (host:port) over TCP, prints the outcome
package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	args := os.Args[1:]
	if len(args) == 0 {
		args = []string{"pause"}
	}
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	switch args[0] {
	case "pause":
		waitTerm()
	case "echo":
		fmt.Println(strings.Join(args[1:], " "))
	case "exit":
		n, _ := strconv.Atoi(arg(1))
		os.Exit(n)
	case "alloc":
		mib, _ := strconv.Atoi(arg(1))
		var keep [][]byte
		for i := range mib {
			b := make([]byte, 1<<20)
			for j := range b {
				b[j] = byte(i + j)
			}
			keep = append(keep, b)
		}
		fmt.Printf("allocated %d MiB\n", len(keep))
		waitTerm()
	case "noterm":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ignoring SIGTERM")
		for {
			// Not select {}: with no other goroutine, the runtime ends
			// that as a deadlock.
			time.Sleep(time.Hour)
		}
	case "term-after":
		s, _ := strconv.Atoi(arg(1))
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		fmt.Println("waiting for SIGTERM")
		<-c
		fmt.Println("SIGTERM")
		time.Sleep(time.Duration(s) * time.Second)
	case "write":
		mib, _ := strconv.Atoi(arg(2))
		f, err := os.Create(arg(1))
		if err != nil {
			fail(err)
		}
		block := make([]byte, 1<<20)
		for range mib {
			if _, err := f.Write(block); err != nil {
				fail(err)
			}
		}
		if err := f.Sync(); err != nil {
			fail(err)
		}
		fmt.Printf("wrote %d MiB to %s\n", mib, arg(1))
		// Exits 143 on SIGTERM, as a JVM does: a kubelet that evicts a
		// container which then exits 0 reports the pod Succeeded, not
		// Failed with reason Evicted.
		waitTerm()
		os.Exit(143)
	case "cat":
		for _, p := range args[1:] {
			b, err := os.ReadFile(p)
			if err != nil {
				fail(err)
			}
			os.Stdout.Write(b)
		}
	case "id":
		fmt.Printf("uid=%d gid=%d\n", os.Getuid(), os.Getgid())
	case "dial":
		conn, err := net.DialTimeout("tcp", arg(1), 5*time.Second)
		if err != nil {
			fail(err)
		}
		fmt.Printf("connected to %s from %s\n", conn.RemoteAddr(), conn.LocalAddr())
		conn.Close()
	default:
		fmt.Fprintf(os.Stderr, "probe: unknown command %q\n", args[0])
		os.Exit(2)
	}
}

func waitTerm() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "probe:", err)
	os.Exit(1)
}
