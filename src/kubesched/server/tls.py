"""The secure port's serving certificate, kept in memory.

``self_signed_serving_certificate`` is GenerateSelfSignedCertKeyWithFixtures
(k8s.io/client-go/util/cert), which kube-scheduler uses when it is given no
--tls-cert-file: a one-year CA "<host>-ca@<unix time>" signing a serving
certificate "<host>@<unix time>" for HOST and the alternate names. It writes
them to --cert-dir; we keep them in memory.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
from collections.abc import Sequence

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubesched.server.memfile import load_cert_chain_in_memory

__all__ = ["self_signed_serving_certificate", "server_ssl_context"]

CERTIFICATE_VALIDITY = dt.timedelta(days=365)
RSA_KEY_BITS = 2048


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    """Digital signature and key encipherment, as client-go's cert.GenerateSelfSignedCertKey
    gives both certificates; certificate signing for the CA only."""
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=True,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=False,
        encipher_only=False,
        decipher_only=False,
    )


def _new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=RSA_KEY_BITS)


def self_signed_serving_certificate(
    host: str,
    alternate_ips: Sequence[str] = (),
    alternate_dns: Sequence[str] = (),
) -> tuple[bytes, bytes]:
    """(certificate chain PEM, private key PEM) for serving as HOST."""
    now = dt.datetime.now(dt.UTC)
    stamp = int(now.timestamp())
    not_before, not_after = now - dt.timedelta(minutes=1), now + CERTIFICATE_VALIDITY

    ca_key = _new_key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}-ca@{stamp}")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .sign(ca_key, hashes.SHA256())
    )

    ips: list[x509.GeneralName] = []
    dns: list[x509.GeneralName] = []
    for name in (host, *alternate_ips, *alternate_dns):
        try:
            ips.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            dns.append(x509.DNSName(name))
    key = _new_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}@{stamp}")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([*dns, *ips]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    chain = cert.public_bytes(serialization.Encoding.PEM) + ca_cert.public_bytes(
        serialization.Encoding.PEM
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    return chain, key_pem


def server_ssl_context(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    """A server context for the secure port; TLS 1.2 at least, as
    SecureServingOptions' default --tls-min-version."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    load_cert_chain_in_memory(context, cert_pem, key_pem)
    return context
