--TEST--
Mdcached\Client: the tags GET_EXTENDED returns ([[tkey, tval], ...]) written back store the same tags
--FILE--
<?php
require __DIR__ . '/mdc_test.inc';
use Mdcached\Client;
$c = mdc_client();
$c->flush();

function tags_of(Client $c, string $k): array
{
    $t = $c->get($k, null, Client::GET_EXTENDED)['tags'];
    sort($t);
    return $t;
}

// the issue's case: int tags read back and stored again
check($c->set('src', 'v', 0, [3 => 4, 16 => 6]), 'set int tags');
$read = $c->get('src', null, Client::GET_EXTENDED)['tags'];
check(count($read) === 2, 'two tags read ' . json_encode($read));
check($c->set('copy', 'v', 0, $read), 'set with the tags read');
check(tags_of($c, 'copy') === [[3, 4], [16, 6]], 'same tags stored ' . json_encode(tags_of($c, 'copy')));
check($c->getByTag(3, 4) !== [] && count($c->getByTag(16, 6)) === 2, 'found by the tags read');
check($c->getByTag(0, [3, 4]) === [] && $c->getByTag(1, [6, 16]) === [], 'no tags 0/1 made up');

// string tags and several values of one key survive the round trip too
check($c->set('s', 'v', 0, ['user:1', 7 => [70, 71]]), 'set mixed');
$read = tags_of($c, 's');
check($c->setMulti(['s2' => 1, 's3' => 2], 0, $read), 'setMulti with the tags read');
check(tags_of($c, 's2') === $read && tags_of($c, 's3') === $read, 'setMulti same tags');
$cas = $c->get('s2', null, Client::GET_EXTENDED)['cas'];
check($c->cas($cas, 's2', 'new', 0, $read) && tags_of($c, 's2') === $read, 'cas same tags');
check(count($c->getByTag('user:1')) === 3, 'string tag kept');

// in a list an array is a pair: [0 => [3, 4]] is the tag (3, 4)
check($c->set('p', 'v', 0, [[3, 4]]) && tags_of($c, 'p') === [[3, 4]], 'list of one pair');
check($c->set('p0', 'v', 0, [[0, 3], [0, 4]]) && tags_of($c, 'p0') === [[0, 3], [0, 4]], 'pairs of tag key 0');
check($c->set('q', 'v', 0, [0 => 5, 1 => 6]) && tags_of($c, 'q') === [[0, 5], [1, 6]], 'list of ints: tkey => tval');

// anything else in a list is a clear error and stores nothing
foreach ([[[1, 2, 3]], [[1]], [[1, 'x']], [[1, 2 ** 40]], [['a' => 1, 'b' => 2]], [[1 => 1, 2 => 2]]] as $i => $bad) {
    check(!$c->set("bad$i", 'v', 0, $bad) && $c->getResultCode() === Client::RES_BAD_TAG, "bad pair $i");
    check(strpos($c->getResultMessage(), 'pair') !== false, "message names the pair: " . $c->getResultMessage());
    check($c->get("bad$i") === false, "bad pair $i stored nothing");
}
echo "done\n";
?>
--EXPECT--
done
