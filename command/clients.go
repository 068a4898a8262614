package command

import (
	"sync"
	"sync/atomic"

	"github.com/tidwall/btree"
)

// clientSet is the server's connected clients, ordered by ID as CLIENT
// LIST shows them. Any goroutine may use it.
type clientSet struct {
	mu   sync.Mutex
	byID btree.Map[int64, *Client]

	nextID   atomic.Int64 // the last client ID given
	accepted atomic.Int64 // connections accepted (total_connections_received)
	rejected atomic.Int64 // connections refused (rejected_connections)
	commands atomic.Int64 // commands read (total_commands_processed)
}

func (cs *clientSet) add(c *Client) {
	cs.mu.Lock()
	cs.byID.Set(c.ID, c)
	cs.mu.Unlock()
}

func (cs *clientSet) remove(c *Client) {
	cs.mu.Lock()
	cs.byID.Delete(c.ID)
	cs.mu.Unlock()
}

func (cs *clientSet) count() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.byID.Len()
}

// list returns the clients ordered by ID.
func (cs *clientSet) list() []*Client {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.byID.Values()
}
