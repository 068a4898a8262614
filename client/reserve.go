package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Reservation names an open RL.RESERVE: settle it with Settle once the
// real cost is known.
type Reservation struct {
	Policy, Key string
	// ID is the server's reservation id: "<deadline-ms>-<seq>".
	ID string
}

// ErrReservationExpired is Settle's error for a reservation whose ttl
// passed: it settled at its estimate, and the real cost changed nothing.
var ErrReservationExpired = errors.New("limitdb: reservation expired, settled at its estimate")

// Reserve is RL.RESERVE: it charges estimate units to policy's key now
// and, when admitted, opens a reservation that Settle corrects with the
// real cost. ttl is how long the reservation stays open (0: the server's
// default, five minutes); unsettled, it settles at its estimate. A denied
// request returns a nil Reservation.
func (c *Client) Reserve(ctx context.Context, policy, key string, estimate int64, ttl time.Duration) (Result, *Reservation, error) {
	args := []any{"RL.RESERVE", policy, key, estimate}
	if ttl > 0 {
		ms := (ttl + time.Millisecond - 1) / time.Millisecond
		args = append(args, fmt.Sprintf("%dms", ms))
	}
	v, err := c.rdb.Do(ctx, args...).Slice()
	if err != nil {
		return Result{}, nil, err
	}
	if len(v) != 6 {
		return Result{}, nil, fmt.Errorf("%w: RL.RESERVE answered %d fields, want 6", ErrReply, len(v))
	}
	r, err := decodeAny(v[:5])
	if err != nil || v[5] == nil {
		return r, nil, err
	}
	id, ok := v[5].(string)
	if !ok {
		return r, nil, fmt.Errorf("%w: RL.RESERVE's id is %T", ErrReply, v[5])
	}
	return r, &Reservation{Policy: policy, Key: key, ID: id}, nil
}

// Settle is RL.SETTLE: it settles res at its actual cost, charging or
// giving back the difference from the estimate. The Result is the key's
// state after it, Limited when the settle left the key over its limit;
// settled is false when res had been settled before (nothing changed).
// A reservation whose ttl passed answers ErrReservationExpired.
func (c *Client) Settle(ctx context.Context, res Reservation, actual int64) (r Result, settled bool, err error) {
	v, err := c.rdb.Do(ctx, "RL.SETTLE", res.Policy, res.Key, res.ID, actual).Slice()
	if err != nil {
		if strings.Contains(err.Error(), ": expired:") {
			return Result{}, false, fmt.Errorf("%w: %v", ErrReservationExpired, err)
		}
		return Result{}, false, err
	}
	if len(v) != 6 {
		return Result{}, false, fmt.Errorf("%w: RL.SETTLE answered %d fields, want 6", ErrReply, len(v))
	}
	r, err = decodeAny(v[:5])
	return r, v[5] == int64(1), err
}

// decodeAny decodes the five uniform fields of a reply read as []any.
func decodeAny(v []any) (Result, error) {
	ns := make([]int64, len(v))
	for i, x := range v {
		n, ok := x.(int64)
		if !ok {
			return Result{}, fmt.Errorf("%w: field %d is %T", ErrReply, i, x)
		}
		ns[i] = n
	}
	return decode(ns, time.Millisecond)
}
