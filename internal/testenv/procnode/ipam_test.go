package procnode

import (
	"net/netip"
	"testing"
)

func TestIPPool(t *testing.T) {
	p, err := newIPPool(netip.MustParsePrefix("127.5.0.0/30"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 3 {
		a, err := p.allocate()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, a.String())
	}
	if want := []string{"127.5.0.1", "127.5.0.2", "127.5.0.3"}; !equal(got, want) {
		t.Errorf("allocated %v, want %v", got, want)
	}
	if _, err := p.allocate(); err == nil {
		t.Error("allocate on a full pool succeeded")
	}
	p.release(netip.MustParseAddr("127.5.0.2"))
	if a, err := p.allocate(); err != nil || a.String() != "127.5.0.2" {
		t.Errorf("after release: %v, %v; want 127.5.0.2", a, err)
	}
}

func TestIPPoolRoundRobin(t *testing.T) {
	p, err := newIPPool(netip.MustParsePrefix("127.6.0.0/16"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := p.allocate()
	p.release(a)
	b, _ := p.allocate()
	if a == b {
		t.Errorf("a released address (%s) came back at once; want the next one", a)
	}
}

func TestIPPoolRejects(t *testing.T) {
	for _, s := range []string{"10.0.0.0/16", "127.0.0.0/8", "127.0.0.0/24", "127.1.0.0/31", "::1/128"} {
		if _, err := newIPPool(netip.MustParsePrefix(s)); err == nil {
			t.Errorf("newIPPool(%s) succeeded", s)
		}
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
