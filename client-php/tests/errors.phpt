--TEST--
Mdcached\Client: errors (dead server, too large, bad key, closed connection), OPT_EXCEPTIONS, no warning on a miss
--FILE--
<?php
require __DIR__ . '/mdc_test.inc';
use Mdcached\Client;
error_reporting(E_ALL);
set_error_handler(function ($no, $str) {
    if (error_reporting() & $no) { echo "WARNING LEAKED: $str\n"; } return true; });
$c = mdc_client();
$c->flush();

// expected misses: false, a code, no warning, no exception even with OPT_EXCEPTIONS
$c->setOption(Client::OPT_EXCEPTIONS, true);
check($c->get('miss') === false && $c->getResultCode() === Client::RES_NOTFOUND, 'miss');
check(!$c->add('miss2', 1) || !$c->add('miss2', 1), 'add twice');
check($c->getResultCode() === Client::RES_DATA_EXISTS, 'exists is an outcome');
check($c->delete('nothing') === false, 'delete miss');
$c->setOption(Client::OPT_EXCEPTIONS, false);

// bad keys
check($c->set('', 'v') === false && $c->getResultCode() === Client::RES_BAD_KEY_PROVIDED, 'empty key');
$long = str_repeat('k', 65535);
check($c->set($long, 'v') === false && $c->getResultCode() === Client::RES_BAD_KEY_PROVIDED, 'key too long');
check($c->get($long) === false && $c->getResultCode() === Client::RES_BAD_KEY_PROVIDED, 'get key too long');
check($c->set(str_repeat('k', 65534), 'v') && $c->get(str_repeat('k', 65534)) === 'v', 'longest key');
$c->setOption(Client::OPT_PREFIX, 'pp');
check($c->get(str_repeat('k', 65533)) === false && $c->getResultCode() === Client::RES_BAD_KEY_PROVIDED, 'prefix counts');
$c->setOption(Client::OPT_PREFIX, '');

// too large
$c->setOption(Client::OPT_COMPRESSION, false);
$huge = random_bytes(3 << 20);
check($c->set('huge', $huge) === false && $c->getResultCode() === Client::RES_E2BIG, 'too large: ' . $c->getResultMessage());
check($c->get('k') === false || true, 'connection usable after E2BIG');
check($c->set('after', 'ok') && $c->get('after') === 'ok', 'usable after E2BIG');

// exceptions
$c->setOption(Client::OPT_EXCEPTIONS, true);
foreach ([fn() => $c->set('huge', $huge), fn() => $c->set('', 1), fn() => $c->set('t', 1, 0, ['k' => 1]),
          fn() => $c->increment('after')] as $i => $f) {
    try {
        $f();
        check(false, "exception $i not thrown");
    } catch (Mdcached\Exception $e) {
        check($e instanceof RuntimeException && $e->getCode() === $c->getResultCode() && $e->getCode() !== 0, "exception $i code");
        check($e->getMessage() === $c->getResultMessage(), "exception $i message");
    }
}
$c->setOption(Client::OPT_EXCEPTIONS, false);

// a dead server: refused connect, then marked dead for the retry delay
$d = new Client();
$d->addServer('127.0.0.1', mdc_free_port());
$d->setOption(Client::OPT_RETRY_TIMEOUT, 60000);
check($d->get('x') === false && $d->getResultCode() === Client::RES_CONNECTION_FAILURE, 'refused: ' . $d->getResultMessage());
// fails fast: the code says no connect was tried (no wall-time bound,
// which a busy machine would break)
check($d->set('x', 1) === false && $d->getResultCode() === Client::RES_SERVER_MARKED_DEAD, 'marked dead');
check($d->getMulti(['a', 'b']) === false && $d->getResultCode() === Client::RES_SERVER_MARKED_DEAD, 'getMulti dead: ' . $d->getResultCode());
check($d->deleteByTag('x') === false, 'deleteByTag dead');
$d->setOption(Client::OPT_EXCEPTIONS, true);
try { $d->get('x'); check(false, 'dead: exception'); }
catch (Mdcached\Exception $e) { check($e->getCode() === Client::RES_SERVER_MARKED_DEAD, 'dead exception'); }

// a server that goes away: the connection closed, a clear code; it comes back
[$proc, $port] = mdc_start_daemon();
$e = new Client();
$e->addServer('127.0.0.1', $port);
$e->setOption(Client::OPT_RETRY_TIMEOUT, 0);
$e->setOption(Client::OPT_READ_TIMEOUT, 2000);
check($e->set('x', 1), 'second daemon');
mdc_stop_daemon($proc);
usleep(100000);
$r = $e->get('x');
check($r === false && in_array($e->getResultCode(), [Client::RES_CONNECTION_CLOSED, Client::RES_CONNECTION_FAILURE], true),
      'closed: ' . $e->getResultCode() . ' ' . $e->getResultMessage());
[$proc, $port] = mdc_start_daemon($port);
check($e->set('x', 2) && $e->get('x') === 2, 'reconnects');
mdc_stop_daemon($proc);

// wrong argument types are PHP TypeErrors, not crashes
foreach ([fn() => $c->set([], 1), fn() => $c->getByTag(new stdClass()), fn() => $c->getMulti('x'), fn() => $c->setOption('x', 1)] as $i => $f) {
    try { $f(); check(false, "type error $i"); } catch (TypeError $e) { }
}
// uninitialised object
$r = (new ReflectionClass(Client::class))->newInstanceWithoutConstructor();
try { $r->get('x'); check(false, 'unconstructed'); } catch (Error $e) { check(str_contains($e->getMessage(), 'not constructed'), 'unconstructed'); }
try { $c->__construct(); check(false, 'twice'); } catch (Error $e) { }
echo "done\n";
?>
--EXPECT--
done
