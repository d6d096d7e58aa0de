// Command coredns is CoreDNS with the few plugins the test cluster of scripts/k8s needs:
// it answers the cluster's names (kubernetes: Services and their pods, such as the
// headless Service's <job>-<index>.<service> that a dist.ddp app's replicas reach rank 0
// by) as real clusters' CoreDNS does. It is CoreDNS's own main (coremain) with a
// directive list of its own, as CoreDNS documents for builds with a chosen set of
// plugins; scripts/k8s/up.sh runs it on the node's bridge address and points the
// kubelet's clusterDNS at it.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

// directives are the plugins in the order CoreDNS runs them (its plugin.cfg's order).
var directives = []string{"bind", "ready", "errors", "kubernetes"}

func main() {
	dnsserver.Directives = directives
	coremain.Run()
}
