--TEST--
Mdcached\Client: servers, options, version, stats, flush, result codes
--FILE--
<?php
require __DIR__ . '/mdc_test.inc';
use Mdcached\Client;

$c = new Client();
var_dump($c->isPristine(), $c->isPersistent());
// no server yet: a clear code, no warning
var_dump($c->get('k'), $c->getResultCode() === Client::RES_NO_SERVERS);
var_dump($c->addServer(getenv('MDC_TEST_HOST'), (int)getenv('MDC_TEST_PORT')));
var_dump($c->addServer(getenv('MDC_TEST_HOST'), (int)getenv('MDC_TEST_PORT'))); // duplicate ignored
var_dump(count($c->getServerList()), $c->getServerList()[0]['port'] == getenv('MDC_TEST_PORT'));
var_dump($c->addServer('', 1), $c->getResultCode() === Client::RES_INVALID_ARGUMENTS);
var_dump($c->addServer('h', 70000));

// options
var_dump($c->getOption(Client::OPT_SERIALIZER) === Client::SERIALIZER_PHP);
var_dump($c->setOption(Client::OPT_PREFIX, 'p:'), $c->getOption(Client::OPT_PREFIX));
var_dump($c->setOptions([Client::OPT_CONNECT_TIMEOUT => 300, Client::OPT_READ_TIMEOUT => 700,
                         Client::OPT_RETRY_TIMEOUT => 0]));
var_dump($c->getOption(Client::OPT_CONNECT_TIMEOUT), $c->getOption(Client::OPT_READ_TIMEOUT),
         $c->getOption(Client::OPT_RETRY_TIMEOUT));
var_dump($c->setOption(9999, 1), $c->getResultCode() === Client::RES_INVALID_ARGUMENTS);
var_dump($c->setOption(Client::OPT_READ_TIMEOUT, 0));
var_dump($c->setOption(Client::OPT_COMPRESSION_TYPE, 77));

// server calls
var_dump($c->flush());
$v = $c->getVersion();
var_dump(count($v), (bool)preg_match('/^\d+\.\d+/', array_values($v)[0]));
$c->set('a', 'b');
$s = $c->getStats();
$s = array_values($s)[0];
var_dump($s['curr_items'] >= 1, is_int($s['curr_items']));
var_dump($c->getStats('no-such-group'), $c->getResultCode() === Client::RES_NOTFOUND);
var_dump($c->flush(5), $c->getResultCode() === Client::RES_NOT_SUPPORTED);
var_dump($c->get('a') === 'b', $c->getResultCode(), $c->getResultMessage());
var_dump($c->quit(), $c->get('a'));   // reconnects
var_dump($c->resetServerList(), $c->isPristine(), $c->getServerList());
try { $x = clone $c; } catch (Error $e) { echo get_class($e), "\n"; }
var_dump(Client::tagOf('page:1') === [Client::STRING_TAG_KEY, crc32('page:1') & 0x7fffffff]);
?>
--EXPECT--
bool(true)
bool(false)
bool(false)
bool(true)
bool(true)
bool(true)
int(1)
bool(true)
bool(false)
bool(true)
bool(false)
bool(true)
bool(true)
string(2) "p:"
bool(true)
int(300)
int(700)
int(0)
bool(false)
bool(true)
bool(false)
bool(false)
bool(true)
int(1)
bool(true)
bool(true)
bool(true)
bool(false)
bool(true)
bool(false)
bool(true)
bool(true)
int(0)
string(7) "SUCCESS"
bool(true)
string(1) "b"
bool(true)
bool(true)
array(0) {
}
Error
bool(true)
