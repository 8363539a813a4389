package matrix

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a redis-server this process started on a loopback port, with
// nothing saved to disk.
type Redis struct {
	Addr string
	cmd  *exec.Cmd
}

// StartRedis starts redis-server (found on PATH) on a free loopback port
// and waits until it answers PING.
func StartRedis() (*Redis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--protected-mode", "yes")
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("matrix: starting redis-server: %w", err)
	}
	r := &Redis{Addr: "127.0.0.1:" + strconv.Itoa(port), cmd: cmd}
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rdb.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return r, nil
		}
		if time.Now().After(deadline) {
			r.Stop()
			return nil, errors.Join(errors.New("matrix: redis-server did not answer PING"), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop ends the redis-server and waits for it.
func (r *Redis) Stop() {
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
}
