package codec

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"unsafe"
)

// sliceHeader is the memory layout of a slice.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

func compileSlice(c *coder, t reflect.Type, inProgress map[reflect.Type]*coder) error {
	c.min = 1 // the count
	if t.Elem().Kind() == reflect.Uint8 {
		c.enc = func(b []byte, p unsafe.Pointer) []byte { return appendBytes(b, *(*[]byte)(p)) }
		c.dec = decodeWith(readBytes, store[[]byte])
		return nil
	}
	ec, err := compile(t.Elem(), inProgress)
	if err != nil {
		delete(inProgress, t)
		return err
	}
	size := t.Elem().Size()
	c.enc = func(b []byte, p unsafe.Pointer) []byte {
		h := (*sliceHeader)(p)
		b = binary.AppendUvarint(b, uint64(h.len))
		for i := range h.len {
			b = ec.enc(b, unsafe.Add(h.data, uintptr(i)*size))
		}
		return b
	}
	c.dec = func(b []byte, p unsafe.Pointer, d *decState) ([]byte, error) {
		n, rest, err := readUvarint(b)
		if err != nil {
			return b, err
		}
		if n == 0 {
			*(*sliceHeader)(p) = sliceHeader{}
			return rest, nil
		}
		// ec.min is read now: a recursive type's is set once compiled.
		if err := d.elements("slice", n, len(rest), ec.min, size); err != nil {
			return b, err
		}
		if err := d.enter(); err != nil {
			return b, err
		}
		s := reflect.MakeSlice(t, int(n), int(n))
		if ec.min > 0 { // else every element is its zero value, as made
			data := s.UnsafePointer()
			for i := 0; i < int(n) && err == nil; i++ {
				rest, err = ec.dec(rest, unsafe.Add(data, uintptr(i)*size), d)
			}
		}
		d.depth--
		reflect.NewAt(t, p).Elem().Set(s)
		return rest, err
	}
	return nil
}

func compileMap(c *coder, t reflect.Type, inProgress map[reflect.Type]*coder) error {
	kc, err := compile(t.Key(), inProgress)
	if err != nil {
		delete(inProgress, t)
		return err
	}
	vc, err := compile(t.Elem(), inProgress)
	if err != nil {
		delete(inProgress, t)
		return err
	}
	kt, vt := t.Key(), t.Elem()
	c.min = 1 // the count
	c.enc = func(b []byte, p unsafe.Pointer) []byte {
		m := reflect.NewAt(t, p).Elem()
		b = binary.AppendUvarint(b, uint64(m.Len()))
		k, v := reflect.New(kt), reflect.New(vt)
		for it := m.MapRange(); it.Next(); {
			k.Elem().SetIterKey(it)
			v.Elem().SetIterValue(it)
			b = kc.enc(b, k.UnsafePointer())
			b = vc.enc(b, v.UnsafePointer())
		}
		return b
	}
	c.dec = func(b []byte, p unsafe.Pointer, d *decState) ([]byte, error) {
		n, rest, err := readUvarint(b)
		if err != nil {
			return b, err
		}
		if kc.min == 0 {
			// Keys that encode to nothing are all the same key.
			if n > 1 {
				return b, fmt.Errorf("map of %d entries whose keys encode to nothing, which are one key", n)
			}
		} else if err := d.elements("map", n, len(rest), addMin(kc.min, vc.min), 0); err != nil {
			return b, err
		}
		if err := d.enter(); err != nil {
			return b, err
		}
		m := reflect.MakeMapWithSize(t, int(n))
		for range n {
			k, v := reflect.New(kt), reflect.New(vt)
			if rest, err = kc.dec(rest, k.UnsafePointer(), d); err != nil {
				return rest, err
			}
			if rest, err = vc.dec(rest, v.UnsafePointer(), d); err != nil {
				return rest, err
			}
			m.SetMapIndex(k.Elem(), v.Elem())
		}
		d.depth--
		reflect.NewAt(t, p).Elem().Set(m)
		return rest, nil
	}
	return nil
}

func compileStruct(c *coder, t reflect.Type, inProgress map[reflect.Type]*coder) error {
	type field struct {
		off uintptr
		c   *coder
	}
	fields := make([]field, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Name == "_" {
			continue
		}
		if !f.IsExported() {
			delete(inProgress, t)
			return fmt.Errorf("field %s of %s is unexported; drover encodes every field, so export it (or implement encoding.BinaryMarshaler)", f.Name, t)
		}
		fc, err := compile(f.Type, inProgress)
		if err != nil {
			delete(inProgress, t)
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		fields = append(fields, field{f.Offset, fc})
		// A field's type is complete (a struct cannot hold itself).
		c.min = addMin(c.min, fc.min)
	}
	pair := isPair(t)
	if pair {
		c.min = addMin(c.min, 1) // the key's length
	}
	c.enc = func(b []byte, p unsafe.Pointer) []byte {
		if pair {
			return appendPair(b, func(b []byte) []byte { return fields[0].c.enc(b, unsafe.Add(p, fields[0].off)) },
				func(b []byte) []byte { return fields[1].c.enc(b, unsafe.Add(p, fields[1].off)) })
		}
		for _, f := range fields {
			b = f.c.enc(b, unsafe.Add(p, f.off))
		}
		return b
	}
	c.dec = func(b []byte, p unsafe.Pointer, d *decState) ([]byte, error) {
		if pair {
			if _, rest, err := ReadLen(b); err != nil {
				return b, err
			} else {
				b = rest
			}
		}
		var err error
		for _, f := range fields {
			if b, err = f.c.dec(b, unsafe.Add(p, f.off), d); err != nil {
				return b, err
			}
		}
		return b, nil
	}
	return nil
}
