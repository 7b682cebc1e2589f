//! Whole command lines parsed as `main` parses them (`Cli`), for the flags that only make sense
//! together: here, at the top of `cli`, so that no command's flags depend on the parser of all of them.

/// `run`'s flags, down to the settings and Lease they give.
mod run {
    use std::time::Duration;

    use clap::Parser;

    use crate::cli::{Cli, Command};
    use crate::controller::Settings;

    fn run_with(extra: &[&str]) -> Result<Settings, clap::Error> {
        let base = [
            "reconcile-host",
            "run",
            "--parent",
            "example.com/v1alpha1/MyApp",
            "--child",
            "apps/v1/Deployment",
            "--module",
            "myapp.wasm",
        ];
        let cli = Cli::try_parse_from(base.iter().chain(extra))?;
        match cli.command {
            Command::Run(args) => Ok(args.settings()),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn the_name_defaults_to_the_kind_and_the_selector_and_names_the_lease() {
        let parse = |extra: &[&str]| {
            let base = [
                "reconcile-host",
                "run",
                "--parent",
                "v1/Namespace",
                "--child",
            ];
            let base = base
                .into_iter()
                .chain(["v1/ResourceQuota", "--module", "m.wasm"]);
            match Cli::try_parse_from(base.chain(extra.iter().copied()))
                .unwrap()
                .command
            {
                Command::Run(args) => {
                    let identity = args.settings().identity;
                    let lease = args.lease(&identity);
                    (identity.label().to_string(), lease)
                }
                other => panic!("parsed as {other:?}"),
            }
        };
        // Without a selector, the Lease is the one hosts had before names.
        let plain = parse(&[]);
        assert_eq!(
            plain,
            ("namespace".into(), "reconcile-host-namespace".into())
        );
        let (a, lease_a) = parse(&["--parent-selector", "team=a"]);
        let (b, lease_b) = parse(&["--parent-selector", "team=b"]);
        assert_ne!(a, b);
        assert_ne!(lease_a, lease_b);
        assert_eq!(lease_a, format!("reconcile-host-{a}"));
        let named = parse(&["--parent-selector", "team=a", "--name", "team-a-quotas"]);
        assert_eq!(
            named,
            (
                "team-a-quotas".into(),
                "reconcile-host-team-a-quotas".into()
            )
        );
        let chosen = parse(&["--name", "x", "--leader-election-id", "mine"]);
        assert_eq!(chosen.1, "mine");
        assert!(run_with(&["--name", "Team_A"]).is_err());
    }

    #[test]
    fn sharded_replicas_join_the_ring_of_their_name_and_elect_its_leader() {
        let options = |extra: &[&str]| {
            let base = [
                "reconcile-host",
                "run",
                "--parent",
                "example.com/v1alpha1/MyApp",
            ];
            let base =
                base.into_iter()
                    .chain(["--child", "apps/v1/Deployment", "--module", "m.wasm"]);
            match Cli::try_parse_from(base.chain(extra.iter().copied()))
                .unwrap()
                .command
            {
                Command::Run(args) => args.options(),
                other => panic!("parsed as {other:?}"),
            }
        };
        let plain = options(&[]);
        assert!(plain.shard.is_none() && plain.election.is_none());
        let sharded = options(&[
            "--sharded",
            "--name",
            "apps",
            "--leader-election-namespace",
            "ops",
        ]);
        let shard = sharded.shard.expect("--sharded joins a ring");
        assert_eq!(
            (shard.ring.as_str(), shard.namespace.as_str()),
            ("apps", "ops")
        );
        // The ring's leader is the leader election's holder: --sharded implies it.
        let election = sharded
            .election
            .expect("--sharded elects the ring's leader");
        assert_eq!(
            (election.lease.as_str(), election.namespace.as_str()),
            ("reconcile-host-apps", "ops")
        );
        assert_ne!(shard.lease_name(), election.lease);
    }

    #[test]
    fn the_resync_period_is_off_unless_given_and_read_as_people_write_it() {
        let period = |extra: &[&str]| run_with(extra).unwrap().resync_period;
        assert_eq!(period(&[]), None);
        assert_eq!(period(&["--resync-period", "0"]), None);
        assert_eq!(
            period(&["--resync-period", "10h"]),
            Some(Duration::from_secs(36_000))
        );
        assert_eq!(
            period(&["--resync-period", "1h30m"]),
            Some(Duration::from_secs(5_400))
        );
        assert!(run_with(&["--resync-period", "-1h"]).is_err());
        assert!(run_with(&["--resync-period", "often"]).is_err());
    }
}

/// `plan`'s flags: a reconciler object or the kind flags, not both.
mod plan {
    use clap::Parser;

    use crate::cli::{Cli, Command, PlanArgs};

    fn plan_with(args: &[&str]) -> Result<PlanArgs, clap::Error> {
        let base = ["reconcile-host", "plan", "--module", "new.wasm"];
        let cli = Cli::try_parse_from(base.iter().chain(args))?;
        match cli.command {
            Command::Plan(args) => Ok(*args),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn a_reconciler_object_replaces_the_kind_flags() {
        let kinds = ["--parent", "example.com/v1alpha1/MyApp"];
        let kinds = [&kinds[..], &["--child", "apps/v1/Deployment"]].concat();
        assert_eq!(plan_with(&kinds).unwrap().reconciler_key(), None);
        assert!(plan_with(&[]).is_err(), "neither kinds nor a reconciler");

        let key = plan_with(&["--reconciler", "team-a/myapp"])
            .unwrap()
            .reconciler_key();
        assert_eq!(key.map(|k| k.to_string()).as_deref(), Some("team-a/myapp"));
        let key = plan_with(&["--cluster-reconciler", "tenants"])
            .unwrap()
            .reconciler_key();
        assert_eq!(key.map(|k| k.to_string()).as_deref(), Some("tenants"));

        // The object says what the flags would: both at once is a contradiction, refused.
        let both = [&kinds[..], &["--reconciler", "team-a/myapp"]].concat();
        assert!(plan_with(&both).is_err());
        for flag in [
            ["--namespace", "team-a"],
            ["--related", "v1/ConfigMap"],
            ["--child-namespace", "team-a"],
            ["--parent-selector", "team"],
        ] {
            let args = [&flag[..], &["--reconciler", "team-a/myapp"]].concat();
            assert!(plan_with(&args).is_err(), "{flag:?}");
        }
        let two = ["--reconciler", "team-a/myapp", "--cluster-reconciler", "x"];
        assert!(plan_with(&two).is_err());
        assert!(
            plan_with(&["--reconciler", "myapp"]).is_err(),
            "no namespace"
        );
    }
}
