"""The apiserver's validation of the objects `simulate` reads, split by subject:

- field_errors: field.Error's texts ("Invalid value: ...", "Unsupported value: ...");
- names_labels: apimachinery's names, label keys and values, annotations, selectors
  and ObjectMeta;
- resources: resource names, quantities and requests against limits;
- pod_spec: ValidatePodSpec (containers, ports, tolerations, priority);
- affinity_spread: affinity terms and topology spread constraints;
- scheduling_objects: Nodes, PriorityClasses and PodDisruptionBudgets;
- fields: the strict decoding before all that (unknown and duplicate fields, JSON
  types, int32/int64 ranges), from the OpenAPI schemas in field_schemas.json.gz.

Each validator yields FieldErrors in upstream's order; the loader reports the
first one of an object and skips the object.
"""
