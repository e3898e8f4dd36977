// Command slowredis is a TCP relay in front of a Redis that delays every
// Nth chunk of replies it forwards, so a benchmark can show what one slow
// Redis reply does to the clients of mcp-runtime (bench/slow_redis.sh).
package main

import (
	"flag"
	"io"
	"log"
	"net"
	"sync/atomic"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:16390", "address to listen on")
	target := flag.String("target", "127.0.0.1:6379", "the Redis to forward to")
	every := flag.Int64("every", 50, "delay every Nth reply chunk")
	delay := flag.Duration("delay", 80*time.Millisecond, "how long to hold it")
	flag.Parse()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	var n atomic.Int64
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			u, err := net.Dial("tcp", *target)
			if err != nil {
				c.Close()
				return
			}
			go func() {
				_, _ = io.Copy(u, c)
				u.Close()
			}()
			buf := make([]byte, 64<<10)
			for {
				k, err := u.Read(buf)
				if k > 0 {
					if n.Add(1)%*every == 0 {
						time.Sleep(*delay)
					}
					if _, werr := c.Write(buf[:k]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			c.Close()
		}()
	}
}
