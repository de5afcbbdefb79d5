"""Kubernetes' protobuf wire format (`application/vnd.kubernetes.protobuf`), the
content type kube-scheduler's clientConnection asks for by default.

- `k8s.binpb`: the descriptors of k8s.io/api and k8s.io/apimachinery's
  generated.proto at hack/k8s-version (`make proto` writes it; it is committed).
- `wire`: the envelope and the watch framing (apimachinery's protobuf serializer
  and LengthDelimitedFramer), the message classes, and the kinds that have them.
- `convert`: the converters from a message to kubesched's structs.
"""
