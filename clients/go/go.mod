module github.com/punctual-dev/punctual/clients/go

go 1.19
