// Command panicapp is a driver whose job panics, for submit's tests.
package main

import "github.com/drover-project/drover"

func main() {
	drover.Main(func(*drover.Context) error {
		panic("panicapp: the job cannot go on")
	})
}
