package soak

// outcome is how one end of a connection ended.
type outcome uint8

const (
	running   outcome = iota
	completed         // read to EOF with every byte intact, wrote all and shut down
	reset             // the peer reset, or the connect was refused, or this end aborted on purpose
	timedOut          // the TCP gave up (ErrTimeout), or IdleTimeout passed without progress
	vanished          // the client vanished: its end dropped without a word
	corrupt           // EOF with the wrong byte count or SHA-256
	failed            // any other error: a bug to look at
)

var outcomeNames = [...]string{"running", "completed", "reset", "timed out", "vanished", "corrupt", "failed"}

func (o outcome) String() string { return outcomeNames[o] }

// behaviour is what a connection's client does.
type behaviour uint8

const (
	normal    behaviour = iota
	aborts              // aborts once it has moved a random share of its bytes
	neverRead           // reads nothing: its window closes and stays shut
)

// record is one connection as both ends see it; the server's end finds it
// by the id in the request's header. It is forgotten once both ends ended.
type record struct {
	id               uint64
	client           int
	how              behaviour
	reqLen, respLen  int64
	reqHash          [32]byte // the request body's SHA-256, set when the client has generated it all
	respHash         [32]byte // the response's, set by the server likewise
	cli, srv         outcome
	srvLinked        bool   // a server end read the header
	cliWhy, srvWhy   string // the error or check that ended an end other than completed
	cliDone, srvDone bool
}

// kind is the connection's ending: completed when both ends completed, a
// timeout when either end timed out, a reset otherwise; corrupt and failed
// ends are reported on their own.
func (r *record) kind() outcome {
	switch {
	case r.cli == corrupt || r.srv == corrupt:
		return corrupt
	case r.cli == failed || r.srv == failed:
		return failed
	case r.cli == completed && r.srv == completed:
		return completed
	case r.cli == timedOut || r.srv == timedOut:
		return timedOut
	}
	return reset
}
