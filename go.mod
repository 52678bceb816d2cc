module github.com/with-lock/with-lock

go 1.26.0

require (
	github.com/pelletier/go-toml/v2 v2.4.3
	github.com/prometheus/client_model v0.6.2
	github.com/prometheus/common v0.71.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/spf13/pflag v1.0.10
	golang.org/x/sys v0.48.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
