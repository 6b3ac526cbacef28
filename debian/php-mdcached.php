mod debian/build/client-php/ext/modules/mdcached.so
mod debian/php/mdcached.ini
