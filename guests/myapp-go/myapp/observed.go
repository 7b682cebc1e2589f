package myapp

import (
	"fmt"
	"strconv"
)

// readyReplicas is status.readyReplicas of the observed Deployment deployName (0 when it has none
// yet, or not an integer), and whether such a Deployment was observed.
func readyReplicas(children []string, deployName string) (int64, bool, error) {
	for i, text := range children {
		child, err := decode(text)
		if err != nil {
			return 0, false, fmt.Errorf("observed child %d is not valid JSON: %v", i, err)
		}
		kind, _ := str(path(child, "kind"))
		name, _ := str(path(child, "metadata", "name"))
		if kind != "Deployment" || name != deployName {
			continue
		}
		ready := int64(0)
		if number, ok := path(child, "status", "readyReplicas").(jsonNumber); ok {
			if n, err := strconv.ParseInt(number.String(), 10, 64); err == nil {
				ready = n
			}
		}
		return ready, true, nil
	}
	return 0, false, nil
}
