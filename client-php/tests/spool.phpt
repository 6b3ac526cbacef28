--TEST--
Mdcached\Client::OPT_SPOOL_DIR: a tag delete that cannot reach the server is spooled, and replayed by the next call once the server is back with its dump (libmdcached's spool)
--FILE--
<?php
require __DIR__ . '/mdc_test.inc';
use Mdcached\Client;
$tmp = getenv('MDC_TEST_TMP');
// the daemon may run as nobody: a directory it can reach and write
$ddir = sys_get_temp_dir() . '/mdc-phpt-spool-' . getmypid();
@mkdir($ddir);
chmod($ddir, 0777);
register_shutdown_function(function () use ($ddir) {
    array_map('unlink', glob("$ddir/{,.}*.mdc*", GLOB_BRACE) ?: []);
    @rmdir($ddir);
});
$dump = "$ddir/d.mdc";
$sdir = "$tmp/spool-dir";
[$proc, $port] = mdc_start_daemon(null, ['-f', $dump]);

$c = new Client();
$c->addServer('127.0.0.1', $port);
check($c->getOption(Client::OPT_SPOOL_DIR) === null, 'off by default');
check($c->setOption(Client::OPT_SPOOL_DIR, "$sdir/x/y") === false, 'a missing parent is refused');
check($c->getResultCode() !== Client::RES_SUCCESS, 'refused: ' . $c->getResultMessage());
check($c->setOption(Client::OPT_SPOOL_DIR, $sdir) === true, 'set: ' . $c->getResultMessage());
check($c->getOption(Client::OPT_SPOOL_DIR) === $sdir, 'read back');
check($c->setOption(Client::OPT_RETRY_TIMEOUT, 0), 'no down mark');
check($c->set('p1', 'page', 0, [1 => 77]), 'tagged record');

mdc_stop_daemon($proc); // dumps at exit
check($c->deleteByTag(1, 77) === false, 'the server is gone');
check(count(glob("$sdir/*.spool")) === 1, 'spooled');

[$proc, $port] = mdc_start_daemon($port, ['-f', $dump]);
$other = new Client(); // no spool: sees what a reader sees
$other->addServer('127.0.0.1', $port);
check($other->get('p1') === 'page', 'back with its dump: the record is served again');
check($c->get('nothing') === false, 'the next call replays first');
check($other->get('p1') === false, 'the invalidation reached it');
echo "done\n";
?>
--EXPECT--
done
