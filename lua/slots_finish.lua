-- slots_finish.lua: finish.lua for a semaphore's slot (slotsFinishScript).
-- The script is slots_release.lua run as the function release(), then
-- record.lua, then this.
-- KEYS[1]: the name's key, as slots_release.lua's; KEYS[2] to KEYS[7]: the
-- record's (record.lua).
-- ARGV[1] to ARGV[6]: slots_release.lua's, all six sent (ARGV[6] '': no
-- Client id); ARGV[7] to ARGV[12]: the record's, from at = 7.
-- Returns {the release's reply, "OK" or the first write's error}.
return record(release(), 7)
