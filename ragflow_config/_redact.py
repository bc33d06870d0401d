"""Credentials out of URLs before they are printed.

A URL may carry a password (``https://user:password@host``) or a key in its
query (``?api_key=...``), whether it was written in a file, expanded from
``${VAR}`` or passed in code. Every URL this package prints (errors, warnings,
``repr``) goes through :func:`redact_url` or :func:`redact_urls` first.
"""

from __future__ import annotations

import re

MASK = "***"
# Query parameters whose value is a credential: api_key, apiKey, key, token,
# access_token, password, client_secret, sig (Azure SAS), X-Amz-Signature, ...
_SECRET_PARAMETER = re.compile(
    r"(key|token|password|passwd|pwd|secret|sig|signature|credential)$", re.IGNORECASE
)
# A URL inside free text: a scheme, then anything up to whitespace or a quote,
# not ending in punctuation ("failed at https://host/v1: timeout").
_URL_IN_TEXT = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]*[^\s'\"<>`.,;:!?)\]}]")


def redact_url(url: str) -> str:
    """``url`` without its userinfo and with secret-looking query values masked.

    ``https://user:pw@host/v1?api_key=k&x=1`` -> ``https://host/v1?api_key=***&x=1``.
    The whole userinfo goes: a name alone is often a token. A URL written
    without a scheme (``user:pw@host:9200``) is understood too; the rest of
    the text is kept as written.
    """
    scheme, separator, rest = url.partition("://")
    if separator:
        # The userinfo ends at the last "@": a password pasted unencoded may hold
        # "/", "?" or "#", and must not be cut in two. (A path or query holding
        # "@" then loses its start in the message; nothing secret shows.)
        rest = rest.rpartition("@")[2]
    else:  # a host written without a scheme, or not a URL at all (a file path)
        scheme, rest = "", url
        userinfo, at, _ = rest.partition("/")[0].rpartition("@")
        rest = rest[len(userinfo) + len(at) :]
    authority_end = min((rest.find(c) for c in "/?#" if c in rest), default=len(rest))
    authority, tail = rest[:authority_end], rest[authority_end:]
    path, question, query = tail.partition("?")
    if question:
        query, hash_mark, fragment = query.partition("#")
        query = "&".join(_redact_parameter(pair) for pair in query.split("&"))
        tail = f"{path}?{query}{hash_mark}{fragment}"
    return f"{scheme}{separator}{authority}{tail}"


def redact_urls(text: str) -> str:
    """``text`` with every ``scheme://...`` URL in it passed through :func:`redact_url`."""
    if "://" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda match: redact_url(match.group(0)), text)


def _redact_parameter(pair: str) -> str:
    name, equals, value = pair.partition("=")
    if equals and value and _SECRET_PARAMETER.search(name):
        return f"{name}={MASK}"
    return pair
