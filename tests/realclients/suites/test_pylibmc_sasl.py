"""pylibmc's suite has no SASL test: this one is run with it by
tests/client_suites.py, against a server started with memcached's -S on
127.0.0.1:$MEMCACHED_SASL_PORT whose only user is $MEMCACHED_SASL_USER /
$MEMCACHED_SASL_PASSWORD (memcached: Cyrus SASL's sasldb; mdcached
--memcached-compat: a user:password file).  SASL runs over memcached's
binary protocol, so libmemcached is told binary=True."""

import os

import pylibmc
import pytest

SERVER = "127.0.0.1:%s" % os.environ.get("MEMCACHED_SASL_PORT", "11213")
USER = os.environ.get("MEMCACHED_SASL_USER", "suiteuser")
PASSWORD = os.environ.get("MEMCACHED_SASL_PASSWORD", "suitepass")


def client(user, password):
    return pylibmc.Client([SERVER], binary=True, username=user,
                          password=password)


def test_sasl_supported():
    assert pylibmc.support_sasl


def test_sasl_login_set_get_delete():
    mc = client(USER, PASSWORD)
    assert mc.set("sasl-key", b"sasl-value")
    assert mc.get("sasl-key") == b"sasl-value"
    assert mc.set("sasl-n", 1)
    assert mc.incr("sasl-n", 1) == 2
    assert mc.delete("sasl-key")
    assert mc.get("sasl-key") is None


def test_sasl_wrong_password_refused():
    mc = client(USER, PASSWORD + "-wrong")
    with pytest.raises(pylibmc.Error):
        mc.set("sasl-other", b"x")
    # nothing was stored by the refused client
    assert client(USER, PASSWORD).get("sasl-other") is None


def test_sasl_unknown_user_refused():
    mc = client(USER + "-nobody", PASSWORD)
    with pytest.raises(pylibmc.Error):
        mc.get("sasl-key")
