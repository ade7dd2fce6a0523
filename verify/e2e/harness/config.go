package harness

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/csv"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// auditPolicy records every request at RequestResponse in every stage. It
// omits no stage, RequestReceived included, so that replay tests see what a
// real log holds; a replayer skips the stages it does not want. Managed
// fields are kept too.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitManagedFields: false
rules:
- level: RequestResponse
`

// writeConfig writes the files the apiserver reads at start: the token file,
// the audit policy and the service account signing key pair.
func (s *Server) writeConfig(users []User) error {
	var tokens strings.Builder
	w := csv.NewWriter(&tokens)
	for _, u := range users {
		token, err := randomToken()
		if err != nil {
			return err
		}
		s.tokens[u.Name] = token
		// token,user,uid,"group1,group2"
		if err := w.Write([]string{token, u.Name, u.Name + "-uid", strings.Join(u.Groups, ",")}); err != nil {
			return fmt.Errorf("writing the token file: %w", err)
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return fmt.Errorf("writing the token file: %w", err)
	}
	if err := os.WriteFile(s.path("tokens.csv"), []byte(tokens.String()), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(s.path("audit-policy.yaml"), []byte(auditPolicy), 0o600); err != nil {
		return err
	}
	return writeServiceAccountKey(s.path("sa.key"), s.path("sa.pub"))
}

// writeServiceAccountKey writes an ECDSA P-256 key pair (ES256 tokens) as
// PEM: the private key for --service-account-signing-key-file and the public
// key for --service-account-key-file.
func writeServiceAccountKey(keyPath, pubPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generating the service account key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("encoding the service account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return fmt.Errorf("encoding the service account key: %w", err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600)
}

// writeKubeconfig writes a kubeconfig that authenticates with token as user.
func (s *Server) writeKubeconfig(user, token string) (string, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: s.url, CertificateAuthority: s.caFile}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[user] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = user
	path := s.path("kubeconfig-" + strings.ReplaceAll(user, "/", "_"))
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("writing the kubeconfig of %s: %w", user, err)
	}
	return path, nil
}

func (s *Server) path(name string) string { return filepath.Join(s.dir, name) }

func randomToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating a token: %w", err)
	}
	return hex.EncodeToString(b), nil
}
