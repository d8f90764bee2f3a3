package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// kinds maps each event's name in the event log to its type.
var kinds = map[string]reflect.Type{}

func init() {
	for _, e := range []Event{&AppStart{}, &AppEnd{}, &JobStart{}, &JobEnd{}, &StageSubmitted{}, &StageCompleted{},
		&TaskStart{}, &TaskEnd{}, &ExecutorAdded{}, &ExecutorRemoved{}, &ExecutorPlaced{}, &AllocationRound{},
		&PodCreated{}, &PodDeleted{}, &TargetChanged{}} {
		t := reflect.TypeOf(e).Elem()
		kinds[t.Name()] = t
	}
}

// Name is the event's type name, as the event log records it.
func Name(e Event) string { return reflect.TypeOf(e).Elem().Name() }

// Marshal encodes e as one JSON object whose "Event" field names its type.
func Marshal(e Event) ([]byte, error) {
	body, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encoding %s event: %w", Name(e), err)
	}
	var b bytes.Buffer
	b.Grow(len(body) + 32)
	fmt.Fprintf(&b, `{"Event":%q`, Name(e))
	if len(body) > 2 {
		b.WriteByte(',')
	}
	b.Write(body[1:])
	return b.Bytes(), nil
}

// Unmarshal decodes what Marshal encoded. An event of a type this version
// does not know is reported with ErrUnknown, so a reader can skip it.
func Unmarshal(data []byte) (Event, error) {
	var head struct{ Event string }
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("decoding event: %w", err)
	}
	t, ok := kinds[head.Event]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknown, head.Event)
	}
	e := reflect.New(t).Interface().(Event)
	if err := json.Unmarshal(data, e); err != nil {
		return nil, fmt.Errorf("decoding %s event: %w", head.Event, err)
	}
	return e, nil
}

// ErrUnknown is an event whose type this version does not know.
var ErrUnknown = errors.New("unknown event type")
