package command

import "github.com/limitdb/limitdb/cluster"

// RLSRoute says where Envoy's rate limit service charges the counter
// key: its slot (-1 outside a cluster, where every key is charged here in
// one RLS.CHARGE) and the client address of the primary that serves it,
// "" when that is this node. Where the cluster cannot say (it is down, no
// node serves the slot) the answer is this node, whose cluster gate then
// answers why.
func (s *Server) RLSRoute(key []byte) (slot int, addr string) {
	cs := s.cluster
	if !cs.on {
		return -1, ""
	}
	slot = cluster.Slot(key)
	cons := cs.cons.Load()
	if cs.emulated || cons == nil {
		return slot, ""
	}
	owner := cons.Topology().Owner(slot)
	if owner == nil || owner.ID == cs.id || (cs.open.Load() != 0 && cs.servesImported(slot, false)) {
		return slot, ""
	}
	return slot, owner.Addr()
}
