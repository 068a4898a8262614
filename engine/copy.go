package engine

// Copy writes a deep copy of src's entry, expiry included, to dst at one
// instant; a dst that exists stays as it is unless replace. It reports
// whether it copied; an absent src copies nothing. Every kind copies, a
// limiter's state included: the copy goes through the entry's serialised
// form, as Rename's move does, so dst shares no memory with src.
func (e *Engine) Copy(src, dst []byte, now int64, replace bool) (done bool, err error) {
	e.DoMulti([][]byte{src, dst}, now, func(ents []Entry) bool {
		if ents[0].Kind == KindNone || string(src) == string(dst) || (ents[1].Kind != KindNone && !replace) {
			return false
		}
		b, encErr := ents[0].AppendBinary(nil)
		if encErr != nil {
			err = encErr
			return false
		}
		copied, _, decErr := DecodeEntry(b)
		if decErr != nil {
			err = decErr
			return false
		}
		ents[1] = copied
		done = true
		return true
	})
	return done, err
}
