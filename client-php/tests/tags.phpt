--TEST--
Mdcached\Client: tags (int and string tags, getByTag, deleteByTag, tag stacks, atomic operations)
--FILE--
<?php
require __DIR__ . '/mdc_test.inc';
use Mdcached\Client;
$c = mdc_client();
$c->flush();

check($c->set('a', 'A', 0, [1 => 10, 2 => 20]), 'int tags');
check($c->set('b', 'B', 0, [1 => 11]), 'int tag');
check($c->set('c', ['C'], 0, ['page:1', 'user:7']), 'string tags');
check($c->set('d', 'D', 0, ['page:1', 3 => [30, 31]]), 'mixed tags');
check($c->set('e', 'E'), 'untagged');

$r = $c->getByTag(1, 10); ksort($r);
check($r === ['a' => 'A'], 'getByTag int ' . json_encode($r));
$r = $c->getByTag(1, [10, 11]); ksort($r);
check($r === ['a' => 'A', 'b' => 'B'], 'getByTag several tvals');
$r = $c->getByTag('page:1'); ksort($r);
check($r === ['c' => ['C'], 'd' => 'D'], 'getByTag string ' . json_encode($r));
$r = $c->getByTag(['user:7', 'page:1']); ksort($r);
check(count($r) === 2, 'getByTag list of strings');
check($c->getByTag(Client::STRING_TAG_KEY, crc32('user:7') & 0x7fffffff) === ['c' => ['C']], 'string tag = documented hash');
check($c->getByTag(3, 31) === ['d' => 'D'], 'tkey => [tvals]');
check($c->getByTag(9, 9) === [] && $c->getResultCode() === Client::RES_SUCCESS, 'getByTag none');
$e = $c->get('a', null, Client::GET_EXTENDED);
check(count($e['tags']) === 2 && in_array([2, 20], $e['tags']), 'tags in GET_EXTENDED');

// tags replaced by a new set
check($c->set('a', 'A2', 0, [2 => 20]), 'reset tags');
check($c->getByTag(1, 10) === [], 'old tag gone');

// deleteByTag returns the count
check($c->deleteByTag('page:1') === 2, 'deleteByTag string count');
check($c->get('c') === false && $c->get('d') === false && $c->get('e') === 'E', 'deleted only tagged');
check($c->deleteByTag('page:1') === 0, 'deleteByTag nothing');
check($c->deleteByTag(1, [10, 11]) === 1 && $c->get('b') === false, 'deleteByTag int');
$rs = $c->getServerResults();
check(count($rs) === 1 && array_values($rs)[0] === 0, 'server results');

// prefix: keys come back without it
$p = mdc_client();
$p->setOption(Client::OPT_PREFIX, 'px:');
$p->set('k', 'v', 0, ['ptag']);
check($p->getByTag('ptag') === ['k' => 'v'], 'prefix stripped');

// bad tags: clear code, nothing stored
foreach ([[1 => 'x' . ''], ['k' => 5], [1 => 2 ** 40], [1 => 1.5], [1 => [1, 'z']], [''], [2 ** 33 => 1]] as $i => $bad) {
    if ($i === 0) { $bad = [1 => null]; }
    check(!$c->set("bt$i", 'v', 0, $bad) && $c->getResultCode() === Client::RES_BAD_TAG, "bad tag $i");
    check($c->get("bt$i") === false, "bad tag $i stored nothing");
}
check($c->getByTag(1) === false && $c->getResultCode() === Client::RES_BAD_TAG, 'int tkey without tvals');
check($c->getByTag('s', 5) === false && $c->getResultCode() === Client::RES_BAD_TAG, 'string tag with tvals');
check($c->deleteByTag(2 ** 40, 1) === false && $c->getResultCode() === Client::RES_BAD_TAG, 'tkey range');
check($c->deleteByTag(1, []) === false && $c->getResultCode() === Client::RES_BAD_TAG, 'no tvals');
check($c->getByTag([1, 2]) === false && $c->getResultCode() === Client::RES_BAD_TAG, 'list of ints');

// tag stacks
$k1 = $c->tagPush('jobs', ['id' => 1]);
$k2 = $c->tagPush('jobs', ['id' => 2], 100);
check(is_string($k1) && is_string($k2) && $k1 !== $k2, 'tagPush keys');
check(count($c->getByTag('jobs')) === 2, 'stack records carry the tag');
check($c->tagPop('jobs') === ['id' => 2] && $c->tagPop('jobs') === ['id' => 1], 'LIFO');
check($c->tagPop('jobs') === false && $c->getResultCode() === Client::RES_NOTFOUND, 'empty stack');
check($c->tagPush(5, 'x', 0, 6) !== false && $c->tagPop(5, 6) === 'x', 'int stack');
check($c->tagPush(5, 'x') === false && $c->getResultCode() === Client::RES_BAD_TAG, 'int stack needs tval');

// atomic operations
$c->set('at', 5);
check($c->fetchAdd('at', 3) === 5 && $c->get('at') === 8, 'fetchAdd');
check($c->cmpSet('at', 8, 100) && $c->get('at') === 100, 'cmpSet ok');
check(!$c->cmpSet('at', 8, 1) && $c->getResultCode() === Client::RES_DATA_EXISTS && $c->get('at') === 100, 'cmpSet mismatch');
check($c->readAndClear('at') === 100 && $c->get('at') === 0, 'readAndClear');
check($c->fetchAdd('none', 1) === false && $c->getResultCode() === Client::RES_NOTFOUND, 'atomic missing');
$c->set('txt', 'abc');
check($c->fetchAdd('txt', 1) === false && $c->getResultCode() === Client::RES_NOT_NUMBER, 'atomic non-number');
echo "done\n";
?>
--EXPECT--
done
