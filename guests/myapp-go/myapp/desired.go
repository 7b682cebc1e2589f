package myapp

// What the rule writes: the Deployment, as the seed's create_deployment builds it, and the status,
// written straight to text. encoding/json would build an encoder per struct type by reflection on its
// first use, in every fresh instance, since the host starts one per call: writing by hand made a fresh
// call 0.68 ms -> 0.46 ms (the resources, the parent's own JSON, still go through encoding/json).

import (
	"strconv"
	"unicode/utf8"
)

// deploymentJSON is the apps/v1 Deployment deployName: labels and selector app: <name>, one container
// main with the parent's image, port 80, and its resources if it has any (left out when the parent sets
// none, so that such Deployments read as before v1beta1; `{}` stays).
func deploymentJSON(app parent, deployName string) string {
	b := make([]byte, 0, 512)
	labels := func(b []byte) []byte {
		b = append(b, `{"app":`...)
		b = appendString(b, app.name)
		return append(b, '}')
	}
	b = append(b, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":`...)
	b = appendString(b, deployName)
	if app.namespace != nil {
		b = append(b, `,"namespace":`...)
		b = appendString(b, *app.namespace)
	}
	b = append(b, `,"labels":`...)
	b = labels(b)
	b = append(b, `},"spec":{"replicas":`...)
	b = strconv.AppendInt(b, int64(app.replicas), 10)
	b = append(b, `,"selector":{"matchLabels":`...)
	b = labels(b)
	b = append(b, `},"template":{"metadata":{"labels":`...)
	b = labels(b)
	b = append(b, `},"spec":{"containers":[{"name":"main","image":`...)
	b = appendString(b, app.image)
	b = append(b, `,"ports":[{"containerPort":80}]`...)
	if app.resources != nil {
		b = append(b, `,"resources":`...)
		b = append(b, toJSON(app.resources)...)
	}
	b = append(b, `}]}}}}`...)
	return string(b)
}

// statusJSON is the guest-owned status: the phase and the replica counts.
func statusJSON(phase string, replicas int32, ready int64) string {
	b := make([]byte, 0, 64)
	b = append(b, `{"phase":`...)
	b = appendString(b, phase)
	b = append(b, `,"replicas":`...)
	b = strconv.AppendInt(b, int64(replicas), 10)
	b = append(b, `,"readyReplicas":`...)
	b = strconv.AppendInt(b, ready, 10)
	return string(append(b, '}'))
}

const hex = "0123456789abcdef"

// appendString writes s as a JSON string: quotes, backslashes and control characters escaped, invalid
// UTF-8 replaced by U+FFFD, as encoding/json does (without its HTML escaping, as the Rust guest).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
