// Command etcd is the etcd v3.6 server, built from the module pinned in this
// directory's go.mod; it behaves exactly as the upstream etcd binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
