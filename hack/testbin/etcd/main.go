// Command etcd is etcd's own server main, built from the module graph that
// kube-apiserver already depends on so the versions always match.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
