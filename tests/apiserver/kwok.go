// The simulated Nodes: kwok (sigs.k8s.io/kwok) runs in this binary as
// "kwok", managing the Nodes createNodes makes, and drives their Pods'
// status through the Stages of kwok-stages.yaml, as a kubelet would report
// it.

package main

import (
	"context"
	_ "embed"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"sigs.k8s.io/kwok/pkg/config"
	kwokcmd "sigs.k8s.io/kwok/pkg/kwok/cmd"
	kwoklog "sigs.k8s.io/kwok/pkg/log"
	"sigs.k8s.io/kwok/pkg/utils/signals"
)

// The Stages kwok applies: Nodes made ready; Pods running and ready, or
// crash-looping when annotated so; Pods being deleted removed.
//
//go:embed kwok-stages.yaml
var kwokStages []byte

// runKwok is kwok's own main (sigs.k8s.io/kwok/cmd/kwok).
func runKwok() int {
	// The apiserver's packages register their --version on pflag's
	// global set, which kwok's command would take up beside its own.
	pflag.CommandLine = pflag.NewFlagSet(os.Args[0], pflag.ExitOnError)
	flagset := pflag.NewFlagSet("global", pflag.ContinueOnError)
	flagset.ParseErrorsAllowlist.UnknownFlags = true
	flagset.Usage = func() {}
	ctx := signals.SetupSignalContext()
	ctx, logger := kwoklog.InitFlags(ctx, flagset)
	ctx, err := config.InitFlags(ctx, flagset)
	if err != nil {
		logger.Error("Init config flags", "err", err)
		return 1
	}
	command := kwokcmd.NewCommand(ctx)
	command.PersistentFlags().AddFlagSet(flagset)
	if err := command.ExecuteContext(ctx); err != nil {
		logger.Error("Execute exit", "err", err)
		return 1
	}
	return 0
}

// kwokNode is the annotation kwok manages a Node by.
const kwokNode = "kwok.x-k8s.io/node"

// createNodes makes n Nodes kwok manages (kwok-node-0, ...), keeping
// those an earlier run of the same data dir made.
func createNodes(ctx context.Context, client kubernetes.Interface, n int) error {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("1k"),
		corev1.ResourceMemory: resource.MustParse("1Ti"),
		corev1.ResourcePods:   resource.MustParse("1M"),
	}
	for i := range n {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        fmt.Sprintf("kwok-node-%d", i),
				Annotations: map[string]string{kwokNode: "fake"},
				Labels:      map[string]string{"type": "kwok", "kubernetes.io/os": "linux"},
			},
			// Each its own Pod range (kwok gives Pods their IP from it),
			// outside the ranges tests name in NetworkPolicies.
			Spec: corev1.NodeSpec{
				PodCIDR:  fmt.Sprintf("10.%d.0.0/16", 128+i),
				PodCIDRs: []string{fmt.Sprintf("10.%d.0.0/16", 128+i)},
			},
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
		}
		_, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Node %s: %w", node.Name, err)
		}
		// The apiserver taints a new Node not-ready (TaintNodesByCondition);
		// the node lifecycle controller, which would lift it, also evicts
		// from Nodes without heartbeats, so it does not run: the taint is
		// lifted here once.
		untaint := []byte(`{"spec":{"taints":null}}`)
		if _, err := client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, untaint, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("lifting Node %s's not-ready taint: %w", node.Name, err)
		}
	}
	return nil
}
