// The test cluster's storage: a pool of PersistentVolumes of no class,
// which the kube-controller-manager's binder binds claims of no class to
// (no provisioner runs, as in a cluster with statically provisioned
// volumes).

package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// volumeSize is each volume's capacity: the claims tests make ask for 1Gi.
const volumeSize = "1Gi"

// createVolumes makes n PersistentVolumes (test-pv-0, ...), keeping those
// an earlier run of the same data dir made. A volume is bound once
// (reclaim policy Retain): n is what one server's tests may claim.
func createVolumes(ctx context.Context, client kubernetes.Interface, n int) error {
	for i := range n {
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("test-pv-%d", i)},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(volumeSize)},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				PersistentVolumeSource: corev1.PersistentVolumeSource{
					HostPath: &corev1.HostPathVolumeSource{Path: fmt.Sprintf("/var/lib/test-pv/%d", i)},
				},
			},
		}
		_, err := client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating PersistentVolume %s: %w", pv.Name, err)
		}
	}
	return nil
}
