package policy

import "fmt"

// MaxWaitReplicas bounds a policy's wait_replicas.
const MaxWaitReplicas = 1000

// validateWait checks wait_replicas.
func (p Policy) validateWait() error {
	if p.WaitReplicas < 0 || p.WaitReplicas > MaxWaitReplicas {
		return &FieldError{"wait_replicas", fmt.Sprintf("must be 0 to %d, got %d", MaxWaitReplicas, p.WaitReplicas)}
	}
	return nil
}

// WaitReplicas is the wait_replicas of the policy in effect under name:
// how many replicas must acknowledge the effect of a command on it before
// its reply leaves; 0 for none or an unknown name. The protocol edge asks
// the connection to hold the reply (command.Client.WaitReplicas).
func (s *Store) WaitReplicas(name []byte) int {
	if c := s.lookup(name); c != nil {
		return c.WaitReplicas
	}
	return 0
}
