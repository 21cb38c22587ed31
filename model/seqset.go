package model

import "sort"

// seqSet is a set of seqs kept as sorted disjoint intervals: a user's
// deliveries of a room are runs of consecutive seqs, so it stays a few
// words however many messages a run delivers.
type seqSet struct{ iv []seqInterval }

type seqInterval struct{ lo, hi uint64 } // inclusive

// has reports whether s holds seq.
func (s *seqSet) has(seq uint64) bool {
	i := sort.Search(len(s.iv), func(i int) bool { return s.iv[i].hi >= seq })
	return i < len(s.iv) && s.iv[i].lo <= seq
}

// add inserts seq and reports whether it was new.
func (s *seqSet) add(seq uint64) bool {
	n := len(s.iv)
	if n > 0 && s.iv[n-1].hi < seq { // the common case: above everything
		if s.iv[n-1].hi+1 == seq {
			s.iv[n-1].hi = seq
		} else {
			s.iv = append(s.iv, seqInterval{seq, seq})
		}
		return true
	}
	i := sort.Search(n, func(i int) bool { return s.iv[i].hi+1 >= seq })
	if i < n && s.iv[i].lo <= seq && seq <= s.iv[i].hi {
		return false
	}
	switch {
	case i < n && s.iv[i].hi+1 == seq: // extends iv[i] up, maybe joining iv[i+1]
		s.iv[i].hi = seq
		if i+1 < n && s.iv[i+1].lo == seq+1 {
			s.iv[i].hi = s.iv[i+1].hi
			s.iv = append(s.iv[:i+1], s.iv[i+2:]...)
		}
	case i < n && s.iv[i].lo == seq+1: // extends iv[i] down
		s.iv[i].lo = seq
	default:
		s.iv = append(s.iv, seqInterval{})
		copy(s.iv[i+1:], s.iv[i:])
		s.iv[i] = seqInterval{seq, seq}
	}
	return true
}
