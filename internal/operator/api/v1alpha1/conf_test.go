package v1alpha1

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/drover-project/drover/internal/config"
)

func ptr[T any](v T) *T { return &v }

func TestOperatorSpecConf(t *testing.T) {
	tests := map[string]struct {
		spec    DroverApplicationSpec
		want    map[string]string
		wantErr string
	}{
		"empty": {want: map[string]string{}},
		"fields": {
			spec: DroverApplicationSpec{
				Image: "registry.example/wc:1", ImagePullPolicy: "Always", Queue: "batch",
				Driver: DriverSpec{RoleSpec{Cores: ptr[int32](2), Memory: "2g", ServiceAccount: "drover-driver"}},
				Executor: ExecutorSpec{RoleSpec: RoleSpec{Cores: ptr[int32](4), CoreRequest: "500m", CoreLimit: "2",
					Memory: "4g", MemoryOverhead: "512m"}, Instances: ptr[int32](3)},
				DynamicAllocation: &DynamicAllocation{Enabled: true, MinExecutors: ptr[int32](1), MaxExecutors: ptr[int32](8)},
				SparkConf:         map[string]string{"spark.task.maxFailures": "2"},
			},
			want: map[string]string{
				config.KubernetesContainerImage.Key():           "registry.example/wc:1",
				config.KubernetesContainerImagePullPolicy.Key(): "Always",
				config.KubernetesQueue.Key():                    "batch",
				config.DriverCores.Key():                        "2",
				config.DriverMemory.Key():                       "2g",
				config.KubernetesDriverServiceAccountName.Key(): "drover-driver",
				config.ExecutorCores.Key():                      "4",
				config.KubernetesExecutorRequestCores.Key():     "500m",
				config.KubernetesExecutorLimitCores.Key():       "2",
				config.ExecutorMemory.Key():                     "4g",
				config.ExecutorMemoryOverhead.Key():             "512m",
				config.ExecutorInstances.Key():                  "3",
				config.DynamicAllocationEnabled.Key():           "true",
				config.DynamicAllocationMinExecutors.Key():      "1",
				config.DynamicAllocationMaxExecutors.Key():      "8",
				config.TaskMaxFailures.Key():                    "2",
			},
		},
		"field and sparkConf agree": {
			spec: DroverApplicationSpec{Executor: ExecutorSpec{RoleSpec: RoleSpec{Memory: "4g"}},
				SparkConf: map[string]string{config.ExecutorMemory.Key(): "4g"}},
			want: map[string]string{config.ExecutorMemory.Key(): "4g"},
		},
		"field and sparkConf differ": {
			spec: DroverApplicationSpec{Executor: ExecutorSpec{RoleSpec: RoleSpec{Memory: "4g"}},
				SparkConf: map[string]string{config.ExecutorMemory.Key(): "2g"}},
			wantErr: "spec.executor.memory=4g and spec.sparkConf[spark.executor.memory]=2g set spark.executor.memory differently",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			before := tt.spec.DeepCopy()
			got, err := tt.spec.Conf()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Conf() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Conf() (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, &tt.spec); diff != "" {
				t.Errorf("Conf() changed the spec (-before +after):\n%s", diff)
			}
		})
	}
}

// TestOperatorSetConfRoundTrip: SetConf then Conf gives the configuration
// back exactly, whether each value fits its field or stays in sparkConf.
func TestOperatorSetConfRoundTrip(t *testing.T) {
	tests := map[string]struct {
		conf          map[string]string
		wantSparkConf map[string]string
	}{
		"canonical values go to fields": {
			conf: map[string]string{config.ExecutorMemory.Key(): "2g", config.ExecutorInstances.Key(): "4",
				config.DynamicAllocationEnabled.Key(): "true", config.DynamicAllocationMaxExecutors.Key(): "10",
				config.KubernetesContainerImage.Key(): "img:1", config.KubernetesContainerImagePullPolicy.Key(): "Never"},
		},
		"other spellings stay in sparkConf": {
			conf: map[string]string{config.ExecutorMemory.Key(): " 2g", config.ExecutorInstances.Key(): "+4",
				config.DynamicAllocationEnabled.Key(): "false", config.DynamicAllocationMaxExecutors.Key(): "infinity",
				config.KubernetesContainerImagePullPolicy.Key(): "never", config.DriverMemory.Key(): "0",
				"spark.eventLog.enabled": "true"},
			wantSparkConf: map[string]string{config.ExecutorMemory.Key(): " 2g", config.ExecutorInstances.Key(): "+4",
				config.DynamicAllocationEnabled.Key(): "false", config.DynamicAllocationMaxExecutors.Key(): "infinity",
				config.KubernetesContainerImagePullPolicy.Key(): "never", config.DriverMemory.Key(): "0",
				"spark.eventLog.enabled": "true"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var s DroverApplicationSpec
			s.SetConf(tt.conf)
			if diff := cmp.Diff(tt.wantSparkConf, s.SparkConf, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("SparkConf (-want +got):\n%s", diff)
			}
			got, err := s.Conf()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.conf, got); diff != "" {
				t.Errorf("Conf() after SetConf (-want +got):\n%s", diff)
			}
		})
	}
}
