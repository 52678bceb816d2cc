-- A lock's once-per marker and the server's clock, read in one step (see
-- windowScript). KEYS[1]: the marker.
local t = redis.call('time')
return {t[1], t[2], redis.call('get', KEYS[1])}
