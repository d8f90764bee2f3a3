package executorid

import (
	"fmt"
	"strconv"
)

// ID is an executor's id: a positive number issued by the cluster manager,
// or Driver.
type ID int64

// Driver is the driver's own executor in local mode, "driver" as in Spark.
const Driver ID = 0

const driverText = "driver"

// String returns the id as Spark writes it: the number, or "driver".
func (id ID) String() string {
	if id == Driver {
		return driverText
	}
	return strconv.FormatInt(int64(id), 10)
}

// Parse reads an id written by String.
func Parse(s string) (ID, error) {
	if s == driverText {
		return Driver, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("executor id %q: want a positive number or %q", s, driverText)
	}
	return ID(n), nil
}

// Strings writes ids as text, in order.
func Strings(ids []ID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}
