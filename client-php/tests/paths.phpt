--TEST--
Mdcached\Client: the shared argument, key, tag and per-server paths (no server, a dead one, bad keys, bad arguments): each method's answer, code and message
--FILE--
<?php
require __DIR__ . '/mdc_test.inc';
use Mdcached\Client;
$c = new Client();
$show = function (string $what, callable $f) use ($c) {
    try {
        $r = $f();
        $out = is_array($r) ? json_encode($r) : var_export($r, true);
        printf("%s: %s, %d, %s\n", $what, $out, $c->getResultCode(),
               $c->getResultMessage());
    } catch (Throwable $e) {
        printf("%s: %s: %s\n", $what, get_class($e), $e->getMessage());
    }
};
// no servers: every method's key, tag, stack or per-server path
$show('get', fn() => $c->get('k'));
$show('get cb', fn() => $c->get('k', fn() => true));
$show('leaseGet', fn() => $c->leaseGet('k', 1, 1));
$show('set', fn() => $c->set('k', 'v'));
$show('delete', fn() => $c->delete('k'));
$show('deleteStale', fn() => $c->deleteStale('k', 5));
$show('increment', fn() => $c->increment('k'));
$show('decrement', fn() => $c->decrement('k', 1, 0));
$show('touch', fn() => $c->touch('k', 5));
$show('cmpSet', fn() => $c->cmpSet('k', 1, 2));
$show('fetchAdd', fn() => $c->fetchAdd('k', 1));
$show('readAndClear', fn() => $c->readAndClear('k'));
$show('getServerByKey', fn() => $c->getServerByKey('k'));
$show('getMulti', fn() => $c->getMulti(['a', 'b']));
$show('setMulti', fn() => $c->setMulti(['a' => 1, 'b' => 2]));
$show('deleteMulti', fn() => $c->deleteMulti(['a', '']));
$show('getStats', fn() => $c->getStats());
$show('getVersion', fn() => $c->getVersion());
$show('flush', fn() => $c->flush());
$show('getByTag', fn() => $c->getByTag('t'));
$show('getByTag results', fn() => $c->getServerResults());
$show('deleteByTag', fn() => $c->deleteByTag(['k' => 1]));
$show('deleteByTagStale', fn() => $c->deleteByTagStale(3, [1, 2], 5));
$show('tagPush', fn() => $c->tagPush('t', 'v'));
$show('tagPop', fn() => $c->tagPop(3, 4));
// bad keys (checked before the server)
$long = str_repeat('k', 65535);
$show('get bad', fn() => $c->get(''));
$show('leaseGet bad', fn() => $c->leaseGet($long));
$show('delete bad', fn() => $c->delete(''));
$show('deleteStale bad', fn() => $c->deleteStale($long, 1));
$show('increment bad', fn() => $c->increment(''));
$show('touch bad', fn() => $c->touch($long, 1));
$show('cmpSet bad', fn() => $c->cmpSet('', 1, 2));
$show('readAndClear bad', fn() => $c->readAndClear($long));
$show('getServerByKey bad', fn() => $c->getServerByKey(''));
$show('setMulti bad', fn() => $c->setMulti(['' => 1]));
// argument checks
$show('getByTag float', fn() => $c->getByTag(1.5));
$show('getByTag tvals', fn() => $c->getByTag('t', 'x'));
$show('getByTag 3 args', fn() => $c->getByTag('t', null, 3));
$show('deleteByTag float', fn() => $c->deleteByTag(1.5));
$show('deleteByTag 3 args', fn() => $c->deleteByTag('t', null, 3));
$show('deleteByTagStale ttl', fn() => $c->deleteByTagStale('t', null, -1));
$show('getByTag bad tag', fn() => $c->getByTag(['k' => 'x']));
$show('tagPush float', fn() => $c->tagPush(1.5, 'v'));
$show('tagPush tval', fn() => $c->tagPush(1, 'v', 0, 'x'));
$show('tagPush two tvals', fn() => $c->tagPush(1, 'v', 0, null));
$show('tagPop tval', fn() => $c->tagPop('t', 'x'));
$show('tagPop array tag', fn() => $c->tagPop(1, [1, 2]));
$show('leaseGet ttl', fn() => $c->leaseGet('k', -1));
$show('deleteStale ttl', fn() => $c->deleteStale('k', -1));
$show('increment offset', fn() => $c->increment('k', -1));
// with a dead server: the per-server paths' failure codes
$c->addServer('127.0.0.1', mdc_free_port());
$show('dead getStats', fn() => $c->getStats());
$show('dead getVersion', fn() => $c->getVersion());
$show('dead getByTag', fn() => $c->getByTag('t'));
$show('dead deleteByTagStale', fn() => $c->deleteByTagStale('t', null, 1));
$show('dead tagPop', fn() => $c->tagPop('t'));
$show('dead touch', fn() => $c->touch('k', 1));
$show('dead getServerByKey', fn() => $c->getServerByKey('k'));
?>
--EXPECTF--
get: false, -9, no servers: call addServer() first
get cb: false, -9, no servers: call addServer() first
leaseGet: false, -9, no servers: call addServer() first
set: false, -9, no servers: call addServer() first
delete: false, -9, no servers: call addServer() first
deleteStale: false, -9, no servers: call addServer() first
increment: false, -9, no servers: call addServer() first
decrement: false, -9, no servers: call addServer() first
touch: false, -9, no servers: call addServer() first
cmpSet: false, -9, no servers: call addServer() first
fetchAdd: false, -9, no servers: call addServer() first
readAndClear: false, -9, no servers: call addServer() first
getServerByKey: false, -9, no servers: call addServer() first
getMulti: false, -9, no servers: call addServer() first
setMulti: false, -9, no servers: call addServer() first
deleteMulti: {"a":-9,"":-22}, -9, no servers
getStats: false, -9, no servers: call addServer() first
getVersion: false, -9, no servers: call addServer() first
flush: false, -9, pool has no servers
getByTag: false, -9, pool has no servers
getByTag results: [], -9, pool has no servers
deleteByTag: false, -21, bad tag: a list of tags must hold non-empty strings
deleteByTagStale: false, -9, pool has no servers
tagPush: false, -9, no servers: call addServer() first
tagPop: false, -9, no servers: call addServer() first
get bad: false, -22, bad key: empty
leaseGet bad: false, -22, bad key: longer than 65534 bytes with the prefix
delete bad: false, -22, bad key: empty
deleteStale bad: false, -22, bad key: longer than 65534 bytes with the prefix
increment bad: false, -22, bad key: empty
touch bad: false, -22, bad key: longer than 65534 bytes with the prefix
cmpSet bad: false, -22, bad key: empty
readAndClear bad: false, -22, bad key: longer than 65534 bytes with the prefix
getServerByKey bad: false, -22, bad key: empty
setMulti bad: false, -9, no servers: call addServer() first
getByTag float: TypeError: Mdcached\Client::getByTag(): Argument #1 ($tag) must be of type array|string|int, float given
getByTag tvals: TypeError: Mdcached\Client::getByTag(): Argument #2 ($tvals) must be of type array|int|null, string given
getByTag 3 args: ArgumentCountError: Mdcached\Client::getByTag() expects at most 2 arguments, 3 given
deleteByTag float: TypeError: Mdcached\Client::deleteByTag(): Argument #1 ($tag) must be of type array|string|int, float given
deleteByTag 3 args: ArgumentCountError: Mdcached\Client::deleteByTag() expects at most 2 arguments, 3 given
deleteByTagStale ttl: ValueError: Mdcached\Client::deleteByTagStale(): Argument #3 ($ttl) must be greater than or equal to 0
getByTag bad tag: false, -9, pool has no servers
tagPush float: TypeError: Mdcached\Client::tagPush(): Argument #1 ($tag) must be of type string|int, float given
tagPush tval: TypeError: Mdcached\Client::tagPush(): Argument #4 ($tval) must be of type ?int, string given
tagPush two tvals: false, -21, bad tag: an integer tag key needs tag values
tagPop tval: TypeError: Mdcached\Client::tagPop(): Argument #2 ($tval) must be of type ?int, string given
tagPop array tag: TypeError: Mdcached\Client::tagPop(): Argument #2 ($tval) must be of type ?int, array given
leaseGet ttl: ValueError: Mdcached\Client::leaseGet(): Argument #2 ($vivifyTtl) must be greater than or equal to 0
deleteStale ttl: ValueError: Mdcached\Client::deleteStale(): Argument #2 ($ttl) must be greater than or equal to 0
increment offset: false, -23, invalid arguments: offset must be >= 0
dead getStats: false, -3, 127.0.0.1:%d: cannot connect: Connection refused
dead getVersion: {"127.0.0.1:%d":"255.255.255"}, -7, 127.0.0.1:%d: marked down after a failure; retry in 2000 ms
dead getByTag: false, -7, get_by_tag: 1 of 1 servers failed; [0] 127.0.0.1:%d: marked down after a failure; retry in 2000 ms
dead deleteByTagStale: false, -7, del_by_tag_stale: 1 of 1 servers failed; [0] 127.0.0.1:%d: marked down after a failure; retry in 2000 ms
dead tagPop: false, -7, 127.0.0.1:%d: marked down after a failure; retry in 2000 ms
dead touch: false, -7, 127.0.0.1:%d: marked down after a failure; retry in 2000 ms
dead getServerByKey: {"host":"127.0.0.1","port":%d,"weight":0}, 0, SUCCESS
