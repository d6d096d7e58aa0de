package spec

import "sync"

// awsNamedResources are TorchX's aws_* named resources, written from
// torchx/specs/named_resources_aws.py (TorchX b72ba038) NAMED_RESOURCES: cpu, gpu,
// memMB, capabilities (the Kubernetes instance-type label) and devices (EFA).
// TestAWSNamedResources (components/pycomp) compares them with TorchX's own. Built at
// first use, not at every wick's start (a map of maps: 139 allocations of package
// initialisation that no verb but a launch with a named resource needs).
var awsNamedResources = sync.OnceValue(func() map[string]Resource {
	return map[string]Resource{
		"aws_t3.medium":     {CPU: 2, GPU: 0, MemMB: 3932, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "t3.medium"}},
		"aws_m5.2xlarge":    {CPU: 8, GPU: 0, MemMB: 31456, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "m5.2xlarge"}},
		"aws_c5.18xlarge":   {CPU: 72, GPU: 0, MemMB: 139586, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "c5.18xlarge"}},
		"aws_p3.2xlarge":    {CPU: 8, GPU: 1, MemMB: 59963, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "p3.2xlarge"}},
		"aws_p3.8xlarge":    {CPU: 32, GPU: 4, MemMB: 239852, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "p3.8xlarge"}},
		"aws_p3.16xlarge":   {CPU: 64, GPU: 8, MemMB: 479704, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "p3.16xlarge"}},
		"aws_p3dn.24xlarge": {CPU: 96, GPU: 8, MemMB: 754944, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "p3dn.24xlarge"}, Devices: map[string]int{"vpc.amazonaws.com/efa": 1}},
		"aws_p4d.24xlarge":  {CPU: 96, GPU: 8, MemMB: 1132416, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "p4d.24xlarge"}, Devices: map[string]int{"vpc.amazonaws.com/efa": 4}},
		"aws_p4de.24xlarge": {CPU: 96, GPU: 8, MemMB: 1132416, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "p4de.24xlarge"}, Devices: map[string]int{"vpc.amazonaws.com/efa": 4}},
		"aws_p5.48xlarge":   {CPU: 192, GPU: 8, MemMB: 2013184, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "p5.48xlarge"}, Devices: map[string]int{"vpc.amazonaws.com/efa": 32}},
		"aws_p5en.48xlarge": {CPU: 192, GPU: 8, MemMB: 2013184, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "p5en.48xlarge"}, Devices: map[string]int{"vpc.amazonaws.com/efa": 16}},
		"aws_g4dn.xlarge":   {CPU: 4, GPU: 1, MemMB: 15728, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "g4dn.xlarge"}},
		"aws_g4dn.2xlarge":  {CPU: 8, GPU: 1, MemMB: 31456, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "g4dn.2xlarge"}},
		"aws_g4dn.4xlarge":  {CPU: 16, GPU: 1, MemMB: 62912, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "g4dn.4xlarge"}},
		"aws_g4dn.8xlarge":  {CPU: 32, GPU: 1, MemMB: 125824, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "g4dn.8xlarge"}, Devices: map[string]int{"vpc.amazonaws.com/efa": 1}},
		"aws_g4dn.16xlarge": {CPU: 64, GPU: 1, MemMB: 251648, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "g4dn.16xlarge"}, Devices: map[string]int{"vpc.amazonaws.com/efa": 1}},
		"aws_g4dn.12xlarge": {CPU: 48, GPU: 4, MemMB: 188736, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "g4dn.12xlarge"}, Devices: map[string]int{"vpc.amazonaws.com/efa": 1}},
		"aws_g4dn.metal":    {CPU: 96, GPU: 8, MemMB: 377472, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "g4dn.metal"}, Devices: map[string]int{"vpc.amazonaws.com/efa": 1}},
		"aws_g5.xlarge":     {CPU: 4, GPU: 1, MemMB: 15728, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "g5.xlarge"}},
		"aws_g5.2xlarge":    {CPU: 8, GPU: 1, MemMB: 31456, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "g5.2xlarge"}},
		"aws_g5.4xlarge":    {CPU: 16, GPU: 1, MemMB: 62912, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "g5.4xlarge"}},
		"aws_g5.8xlarge":    {CPU: 32, GPU: 1, MemMB: 125824, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "g5.8xlarge"}, Devices: map[string]int{"vpc.amazonaws.com/efa": 1}},
		"aws_g5.16xlarge":   {CPU: 64, GPU: 1, MemMB: 251648, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "g5.16xlarge"}, Devices: map[string]int{"vpc.amazonaws.com/efa": 1}},
		"aws_g5.12xlarge":   {CPU: 48, GPU: 4, MemMB: 188736, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "g5.12xlarge"}, Devices: map[string]int{"vpc.amazonaws.com/efa": 1}},
		"aws_g5.24xlarge":   {CPU: 96, GPU: 4, MemMB: 377472, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "g5.24xlarge"}, Devices: map[string]int{"vpc.amazonaws.com/efa": 1}},
		"aws_g5.48xlarge":   {CPU: 192, GPU: 8, MemMB: 754944, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "g5.48xlarge"}, Devices: map[string]int{"vpc.amazonaws.com/efa": 1}},
		"aws_g6e.xlarge":    {CPU: 4, GPU: 1, MemMB: 31456, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "g6e.xlarge"}},
		"aws_g6e.2xlarge":   {CPU: 8, GPU: 1, MemMB: 62912, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "g6e.2xlarge"}},
		"aws_g6e.4xlarge":   {CPU: 16, GPU: 1, MemMB: 125824, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "g6e.4xlarge"}},
		"aws_g6e.8xlarge":   {CPU: 32, GPU: 1, MemMB: 251648, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "g6e.8xlarge"}},
		"aws_g6e.16xlarge":  {CPU: 64, GPU: 1, MemMB: 503296, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "g6e.16xlarge"}},
		"aws_g6e.12xlarge":  {CPU: 48, GPU: 4, MemMB: 377472, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "g6e.12xlarge"}},
		"aws_g6e.24xlarge":  {CPU: 96, GPU: 4, MemMB: 754944, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "g6e.24xlarge"}, Devices: map[string]int{"vpc.amazonaws.com/efa": 2}},
		"aws_g6e.48xlarge":  {CPU: 192, GPU: 8, MemMB: 1509888, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "g6e.48xlarge"}, Devices: map[string]int{"vpc.amazonaws.com/efa": 4}},
		"aws_trn1.2xlarge":  {CPU: 8, GPU: 0, MemMB: 31456, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "trn1.2xlarge"}, Devices: map[string]int{"aws.amazon.com/neurondevice": 1}},
		"aws_trn1.32xlarge": {CPU: 128, GPU: 0, MemMB: 503296, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "trn1.32xlarge"}, Devices: map[string]int{"vpc.amazonaws.com/efa": 8, "aws.amazon.com/neurondevice": 16}},
		"aws_inf2.xlarge":   {CPU: 4, GPU: 0, MemMB: 15728, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "inf2.xlarge"}, Devices: map[string]int{"aws.amazon.com/neurondevice": 1}},
		"aws_inf2.8xlarge":  {CPU: 32, GPU: 0, MemMB: 125824, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "inf2.8xlarge"}, Devices: map[string]int{"aws.amazon.com/neurondevice": 1}},
		"aws_inf2.24xlarge": {CPU: 96, GPU: 0, MemMB: 377472, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "inf2.24xlarge"}, Devices: map[string]int{"aws.amazon.com/neurondevice": 6}},
		"aws_inf2.48xlarge": {CPU: 192, GPU: 0, MemMB: 754944, Capabilities: map[string]string{"node.kubernetes.io/instance-type": "inf2.48xlarge"}, Devices: map[string]int{"aws.amazon.com/neurondevice": 12}},
	}
})
