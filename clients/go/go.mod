module github.com/punctual-rs/punctual/clients/go

go 1.19
