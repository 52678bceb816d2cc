module github.com/with-lock/with-lock/beds

go 1.26.8

require (
	github.com/redis/go-redis/v9 v9.23.0
	github.com/with-lock/with-lock v0.0.0
	go.yaml.in/yaml/v3 v3.0.5
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

replace github.com/with-lock/with-lock => ../
