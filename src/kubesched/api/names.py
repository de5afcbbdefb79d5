"""Names, label keys and label values, as apimachinery validates them
(pkg/util/validation and pkg/api/validate/content): the one implementation of
these rules, for the manifest validator (cluster/validation), label selectors
(api/labels) and the plugins' args.

The texts are upstream's, including its two spellings of the length limit:
util/validation's IsDNS1123Label/Subdomain say "characters" (object names),
content's say "bytes" (the prefix of a label key, label values). Lengths are
counted in bytes, as Go's len() counts them, whichever word the text uses.
"""

from __future__ import annotations

import re
from functools import lru_cache

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_LABEL = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN = re.compile(_DNS1123_SUBDOMAIN_FMT)
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY = re.compile(_LABEL_KEY_FMT)
_LABEL_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_FMT = "(" + _LABEL_KEY_FMT + ")?"
_LABEL_VALUE = re.compile(_LABEL_VALUE_FMT)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, "
    "'-', '_' or '.', and must start and end with an alphanumeric character"
)
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * (1 << 10)  # TotalAnnotationSizeLimitB


def regex_error(message: str, fmt: str, *examples: str) -> str:
    """validation.RegexError."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    # Each example is followed by "', " and the next one by " or " (so two spaces
    # between them), as content.RegexError writes it.
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


def byte_length(value: str) -> int:
    return len(value.encode())  # Go's len() counts bytes


@lru_cache(maxsize=4096)
def dns1123_label_errors(value: str) -> tuple[str, ...]:
    """validation.IsDNS1123Label."""
    errors = []
    if byte_length(value) > 63:
        errors.append("must be no more than 63 characters")
    if _DNS1123_LABEL.fullmatch(value) is None:
        if _DNS1123_SUBDOMAIN.fullmatch(value) is not None:
            errors.append("must not contain dots")
        else:
            errors.append(regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return tuple(errors)


_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL = re.compile(_DNS1035_LABEL_FMT)
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
    "with an alphabetic character, and end with an alphanumeric character"
)


def dns1035_label_errors(value: str) -> tuple[str, ...]:
    """validation.IsDNS1035Label (the names of Services)."""
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if _DNS1035_LABEL.fullmatch(value) is None:
        errors.append(regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return tuple(errors)


@lru_cache(maxsize=4096)
def dns1123_subdomain_errors(value: str, unit: str = "characters") -> tuple[str, ...]:
    """validation.IsDNS1123Subdomain ("characters"); content.IsDNS1123Subdomain ("bytes")."""
    errors = []
    if byte_length(value) > 253:
        errors.append(f"must be no more than 253 {unit}")
    if _DNS1123_SUBDOMAIN.fullmatch(value) is None:
        errors.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return tuple(errors)


@lru_cache(maxsize=4096)
def qualified_name_errors(value: str) -> tuple[str, ...]:
    """validation.IsQualifiedName (content.IsLabelKey): an optional DNS-subdomain
    prefix and '/', then a name of at most 63 characters."""
    parts = value.split("/")
    errors: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend("prefix part " + e for e in dns1123_subdomain_errors(prefix, "bytes"))
    else:
        return (
            "a valid label key "
            + regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        )
    if not name:
        errors.append("name part must be non-empty")
    elif byte_length(name) > 63:
        errors.append("name part must be no more than 63 bytes")
    if _LABEL_KEY.fullmatch(name) is None:
        errors.append(
            "name part "
            + regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        )
    return tuple(errors)


@lru_cache(maxsize=4096)
def label_value_errors(value: str) -> tuple[str, ...]:
    """validation.IsValidLabelValue (content.IsLabelValue)."""
    errors = []
    if byte_length(value) > 63:
        errors.append("must be no more than 63 bytes")
    if _LABEL_VALUE.fullmatch(value) is None:
        errors.append(
            regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return tuple(errors)


# Resource names (pkg/apis/core/v1/helper/helpers.go): one implementation for the
# API server's validation, NodeResourcesFit and the extenders' managedResources.
RESOURCE_DEFAULT_NAMESPACE_PREFIX = "kubernetes.io/"
RESOURCE_REQUESTS_PREFIX = "requests."


def is_native_resource(name: str) -> bool:
    """helper.IsNativeResource: unprefixed, or in the kubernetes.io namespace."""
    return "/" not in name or RESOURCE_DEFAULT_NAMESPACE_PREFIX in name


@lru_cache(maxsize=1024)
def is_extended_resource_name(name: str) -> bool:
    """helper.IsExtendedResourceName: not native, and "requests." + name is a
    qualified name (the form a ResourceQuota names it by)."""
    if is_native_resource(name) or name.startswith(RESOURCE_REQUESTS_PREFIX):
        return False
    return not qualified_name_errors(RESOURCE_REQUESTS_PREFIX + name)
