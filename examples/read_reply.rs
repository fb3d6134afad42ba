//! Reads a helper reply file and prints what a toolstack would store for the card.
//!
//! ```text
//! cargo run -p examples --example read-reply -- mxctl/tests/replies/lossy.json [BDF]
//! ```

use gpu_partition_types::{Bdf, Outcome, Reply};
use std::error::Error;

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: read-reply FILE [BDF]")?;
    let asked: Option<Bdf> = args.next().map(|text| text.parse()).transpose()?;
    let bytes = std::fs::read(&path).map_err(|error| format!("cannot read {path}: {error}"))?;

    let reply = match Reply::from_json(&bytes, asked.as_ref()) {
        Ok(reply) => reply,
        Err(refusal) => {
            // A toolstack stores the card as unknown with the reason `undecodable`.
            println!("partition_mode: unknown");
            println!("reason:         undecodable ({refusal})");
            return Ok(());
        }
    };
    let outcome = reply.outcome();
    println!("device:         {}", reply.device);
    println!("partition_mode: {}", outcome.partition_mode());
    match &outcome {
        Outcome::Partitions {
            instances, vgpus, ..
        } => {
            println!("gpu instances:  {}", instances.len());
            for instance in instances {
                let on_it = vgpus
                    .iter()
                    .filter(|vgpu| vgpu.gpu_instance_id.as_option() == Some(&instance.id))
                    .count();
                println!(
                    "  instance {} (profile {}): {on_it} vGPU(s)",
                    instance.id, instance.profile_id
                );
            }
        }
        Outcome::NoneCarved { catalogue, .. } => {
            println!("no instance carved; {} profile(s) offered", catalogue.len());
        }
        Outcome::Unreadable(reason) => println!("reason:         {reason}"),
        _ => {}
    }
    for lost in reply.lost() {
        println!("lost:           {lost}");
    }
    Ok(())
}
